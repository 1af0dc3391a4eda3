import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const ContactEntity = defineEntity({
  name: "Contact",
  tableName: "contact",
  properties: {
    id: p.uuid().primary(),
    organisationId: p.uuid().index(),
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
    updatedAt: p.datetime(3).onCreate(() => new Date()).onUpdate(() => new Date()),
  },
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
