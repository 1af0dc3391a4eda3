// The email rule, defined once: what the platform accepts as an email address
// (a member's login, a contact's email field), and the one form a member's
// login email is stored, looked up and rate-limited under. Deliberately loose, since
// anything stricter rejects real addresses: one "@", no whitespace, a dot in
// the domain, and a bounded length.
//
// RFC 5321, 4.5.3.1.1: "The maximum total length of a user name or other
// local-part is 64 octets." 4.5.3.1.2: "The maximum total length of a domain
// name or number is 255 octets." 64 + 1 + 255 = 320.
export const EMAIL_MAX_LENGTH = 320;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * A member's login email as stored and compared: trimmed and in lower case,
 * so that "Ada@Example.com " logs in as the member "ada@example.com" and
 * counts against the same failure limit.
 */
export function normaliseEmail(value: string): string {
  return value.trim().toLowerCase();
}

/** True for a value that is an email address by this rule; callers trim (and, for a login, normaliseEmail) it first. */
export function isEmailAddress(value: string): boolean {
  return [...value].length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}
