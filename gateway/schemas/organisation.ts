// The token's organisation and its contacts (services/shared/contact-json.ts
// writes the contact; webhook events carry the same object in `data`).
import { z } from "zod";

const Time = z.iso.datetime();

export const Contact = z
  .object({
    id: z.string().describe("The contact's id (a UUID)"),
    first_name: z.string(),
    last_name: z.string(),
    email: z.string().describe("An email address, or empty"),
    phone: z.string(),
    company: z.string(),
    job_title: z.string(),
    website: z.string(),
    address: z.string(),
    notes: z.string(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: "Contact", description: "A contact: every field present, an empty string when unset" });

export const ContactList = z.array(Contact).describe("Newest first");

export const contactExample = {
  id: "019bc0fd-89c0-7c55-8f0e-1d2a3b4c5d6e",
  first_name: "Ada",
  last_name: "Lovelace",
  email: "ada@example.com",
  phone: "+44 20 7946 0000",
  company: "Analytical Engines Ltd",
  job_title: "Engineer",
  website: "https://example.com",
  address: "",
  notes: "Met at the conference",
  created_at: "2026-01-15T09:30:00.000Z",
  updated_at: "2026-01-15T09:30:00.000Z",
};

export const Organisation = z
  .object({
    id: z.string().describe("The organisation's id"),
    name: z.string().describe("Its name, for a connection's label"),
  })
  .meta({ id: "Organisation", description: "The token's organisation" });

export const Health = z
  .object({
    status: z.literal("ok"),
    version: z.string().describe("The platform's version (package.json)"),
    commit: z.string().optional().describe("The git commit it was built from, where known"),
  })
  .describe("The process is up, and what it runs");

export const Readiness = z
  .object({
    status: z.literal("ok"),
    services: z
      .record(z.string(), z.enum(["ok", "unavailable"]))
      .describe("Every service, by name; an optional one may be unavailable"),
  })
  .describe("The services the gateway needs answer");
