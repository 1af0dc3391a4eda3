// What a contact field may hold. Every value is trimmed; an empty string
// clears the field. Errors name the field (snake_case, as on the wire).
import type { ContactFields } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { EMAIL_MAX_LENGTH, isEmailAddress } from "../../shared/email.js";
import { invalid } from "../../shared/validation.js";
import { CONTACT_FIELDS, snakeCase, type ContactField } from "./contact.entity.js";

type Rule = { max: number; multiline?: boolean; check?: (v: string) => boolean; expected?: string };

const PHONE = /^[0-9+()\-./ x]*$/i;

function isWebUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password;
  } catch {
    return false;
  }
}

const RULES: Record<ContactField, Rule> = {
  firstName: { max: 200 },
  lastName: { max: 200 },
  email: { max: EMAIL_MAX_LENGTH, check: isEmailAddress, expected: "an email address" },
  phone: { max: 50, check: (v) => PHONE.test(v), expected: "digits, spaces and + ( ) - . /" },
  company: { max: 200 },
  jobTitle: { max: 200 },
  website: { max: 2048, check: isWebUrl, expected: "an http or https URL" },
  address: { max: 1000, multiline: true },
  notes: { max: 10_000, multiline: true },
};

// Control characters, except tab and newlines where a field is multi-line.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const CONTROL_OR_NEWLINE = /[\u0000-\u001f\u007f]/;

/** The fields that are set, validated and trimmed. */
export function readContactFields(fields: ContactFields | undefined): Partial<Record<ContactField, string>> {
  const out: Partial<Record<ContactField, string>> = {};
  if (!fields) return out;
  for (const name of CONTACT_FIELDS) {
    const raw = fields[name];
    if (raw === undefined) continue;
    const value = raw.trim();
    const rule = RULES[name];
    const field = snakeCase(name);
    if ([...value].length > rule.max) throw invalid(field, `at most ${rule.max} characters`);
    if ((rule.multiline ? CONTROL : CONTROL_OR_NEWLINE).test(value))
      throw invalid(field, "must not contain control characters");
    if (value !== "" && rule.check && !rule.check(value)) throw invalid(field, `expected ${rule.expected}`);
    out[name] = value;
  }
  return out;
}
