// The email rule, defined once: what the platform accepts as an email address
// (a member's login, a contact's email field). Deliberately loose, since
// anything stricter rejects real addresses: one "@", no whitespace, a dot in
// the domain, and a bounded length.
//
// RFC 5321, 4.5.3.1.1: "The maximum total length of a user name or other
// local-part is 64 octets." 4.5.3.1.2: "The maximum total length of a domain
// name or number is 255 octets." 64 + 1 + 255 = 320.
export const EMAIL_MAX_LENGTH = 320;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** True for a value that is an email address by this rule; callers trim (and lower-case) it first. */
export function isEmailAddress(value: string): boolean {
  return [...value].length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}
