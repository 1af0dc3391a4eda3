import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { OrganisationEntity } from "../organisations/organisation.entity.js";

export const ContactEntity = defineEntity({
  name: "Contact",
  tableName: "contact",
  properties: {
    id: p.uuid().primary(),
    /** The organisation's id (a foreign key, deleted with it). */
    organisationId: () =>
      p
        .manyToOne(OrganisationEntity)
        .mapToPk()
        .fieldName("organisation_id")
        .foreignKeyName("contact_organisation_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("contact_organisation_id_index"),
    firstName: p.text().default(""),
    lastName: p.text().default(""),
    email: p.text().default(""),
    phone: p.text().default(""),
    company: p.text().default(""),
    jobTitle: p.text().default(""),
    website: p.text().default(""),
    address: p.text().default(""),
    notes: p.text().default(""),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    updatedAt: p
      .datetime(3)
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
  // ListContacts: the migration makes the last two columns "desc", which the schema diff does not compare.
  indexes: [{ name: "contact_organisation_newest_index", properties: ["organisationId", "createdAt", "id"] }],
});

export type Contact = InferEntity<typeof ContactEntity>;

/** The writable fields, in proto order. */
export const CONTACT_FIELDS = [
  "firstName",
  "lastName",
  "email",
  "phone",
  "company",
  "jobTitle",
  "website",
  "address",
  "notes",
] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

/** A field's column, and its name on the wire. */
export const snakeCase = (f: ContactField) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
