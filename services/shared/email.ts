// The email rule, defined once: what the platform accepts as an email address,
// deliberately loose (anything stricter rejects real addresses), and the one
// form a login email is stored under.

// RFC 5321 4.5.3.1.1 and 4.5.3.1.2: local-part at most 64 octets, domain at most 255.
export const EMAIL_MAX_LENGTH = 320;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A login email as stored and compared: "Ada@Example.com " logs in, and is limited, as "ada@example.com". */
export function normaliseEmail(value: string): string {
  return value.trim().toLowerCase();
}

/** True for a value that is an email address by this rule; callers trim (and, for a login, normaliseEmail) it first. */
export function isEmailAddress(value: string): boolean {
  return [...value].length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}
