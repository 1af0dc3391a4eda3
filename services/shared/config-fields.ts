// The kinds of value the configuration reads (config.ts): each a zod schema
// of an environment variable's string.
import { z } from "zod";

/** A whole number; blank counts as unset (what `VAR=` in a .env file or an empty `${VAR}` gives). */
export const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.trim() : undefined))
    .pipe(
      z
        .string()
        .regex(/^\d{1,9}$/, "expected a whole number")
        .optional(),
    )
    .transform((v) => (v === undefined ? fallback : Number(v)))
    .pipe(z.number().min(min, `expected ${min} to ${max}`).max(max, `expected ${min} to ${max}`));
export const port = (fallback: number) => int(fallback, 0, 65535);
export const bool = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"], { message: "expected true or false" })
    .default(fallback ? "true" : "false")
    .transform((v) => v === "true" || v === "1" || v === "yes");
export const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `expected a ${protocols.join(" or ")} URL`,
  );
export const optionalUrl = (protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v))
    .pipe(url(protocols).optional());

/** A web origin exactly as a browser sends it in Origin: scheme://host[:port], lower case, no default port, no path. */
const isOrigin = (v: string): boolean => {
  try {
    const u = new URL(v);
    return (u.protocol === "https:" || u.protocol === "http:") && u.origin === v;
  } catch {
    return false;
  }
};
/** Comma-separated web origins; blank counts as none. */
export const origins = () =>
  z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .refine(
            isOrigin,
            "expected origins such as https://agent.example (scheme, host and port as a browser sends them: no path, no trailing slash), comma-separated",
          ),
      ),
    );

/** Base64 or base64url, padded or not. */
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
/**
 * 256-bit keys, comma-separated, each base64 (or base64url) of 32 bytes;
 * blank counts as none. Parsed to the keys, in order. An error names an
 * entry by its position, never its value.
 */
export const keys256 = () =>
  z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.split(",").map((k) => k.trim()) : []))
    .superRefine((list, ctx) => {
      list.forEach((key, i) => {
        const bytes = BASE64.test(key) ? Buffer.from(key, "base64").length : undefined;
        if (bytes === 32) return;
        const what = bytes === undefined ? "is not base64" : `decodes to ${bytes} bytes`;
        ctx.addIssue({
          code: "custom",
          message: `key ${i + 1} of ${list.length} ${what}: expected base64 of 32 random bytes each (openssl rand -base64 32), comma-separated`,
        });
      });
    })
    .transform((list): Buffer[] => list.map((key) => Buffer.from(key, "base64")));
