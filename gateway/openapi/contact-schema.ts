// The contact as integrators see it in event bodies: exactly what
// services/shared/contact-json.ts writes, every field always present.
import { z } from "zod";
import type { ContactJson } from "../../services/shared/contact-json.js";

const text = (description: string) => z.string().describe(description);
const optionalText = (what: string) => text(`${what}; "" when not set.`);

export const ContactSchema = z
  .object({
    id: z.uuid().describe("The contact's id (a UUID)."),
    first_name: text('First name; "" when not set (at least one of first_name and last_name is non-empty).'),
    last_name: text('Last name; "" when not set (at least one of first_name and last_name is non-empty).'),
    email: optionalText("Email address"),
    phone: optionalText("Phone number, as entered"),
    company: optionalText("Company or organisation the contact works for"),
    job_title: optionalText("Job title"),
    website: optionalText("Website, as entered"),
    address: optionalText("Postal address, free text, may contain line breaks"),
    notes: optionalText("Free-text notes"),
    created_at: z.iso.datetime().describe("When the contact was created (RFC 3339, UTC)."),
    updated_at: z.iso
      .datetime()
      .describe("When the contact was last changed (RFC 3339, UTC); equal to created_at until the first change."),
  })
  .describe("A contact of the organisation (a business card).");

export type Contact = z.output<typeof ContactSchema>;

/** The schema's fields are exactly the public JSON's: a field added on one side and not the other fails to compile. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const CONTACT_MATCHES_JSON: Same<Contact, ContactJson> = true;

export const CONTACT_EXAMPLE: Contact = {
  id: "01a20380-c360-7c4e-8b6f-0a8d7e6c5b4a",
  first_name: "Ada",
  last_name: "Lovelace",
  email: "ada@example.com",
  phone: "+44 20 7946 0958",
  company: "Analytical Engines Ltd",
  job_title: "Head of Research",
  website: "https://example.com/ada",
  address: "12 St James's Square\nLondon SW1Y 4JH",
  notes: "Met at the Difference Engine meetup.",
  created_at: "2026-11-22T13:45:00.000Z",
  updated_at: "2026-11-22T13:45:00.000Z",
};
