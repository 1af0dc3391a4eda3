// The kinds of value the configuration reads (config.ts): each a zod schema
// of an environment variable's string. Blank counts as unset (what `VAR=` in
// a .env file or an empty `${VAR}` gives).
import { isIP } from "node:net";
import { z } from "zod";

/** A whole number from `min` to `max`; `fallback` when unset. */
export const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v) => v?.trim() || undefined)
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
export const optionalUrl = (protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(
      z
        .string()
        .refine(
          (v) => URL.canParse(v) && protocols.includes(new URL(v).protocol),
          `expected a ${protocols.join(" or ")} URL`,
        )
        .optional(),
    );

/** Comma-separated values, blank ones dropped, each passing `item`. */
export const list = (item: z.ZodType<string, string>) =>
  z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item));

/** A web origin exactly as a browser sends it in Origin: scheme://host[:port], lower case, no default port, no path. */
const isOrigin = (v: string): boolean =>
  URL.canParse(v) && ["https:", "http:"].includes(new URL(v).protocol) && new URL(v).origin === v;
/** Comma-separated web origins. */
export const origins = () =>
  list(
    z
      .string()
      .refine(
        isOrigin,
        "expected origins such as https://agent.example (scheme, host and port as a browser sends them: no path, no trailing slash), comma-separated",
      ),
  );

/** Base64 or base64url, padded or not. */
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
/** Comma-separated base64 (or base64url) of 32 bytes each; an error names an entry by position, never value. */
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

/** "1.2.3.4", "1.2.3.4:53", "::1", "[::1]:53" (what dns.Resolver.setServers takes). */
export function isDnsServer(value: string): boolean {
  if (isIP(value)) return true;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!m || Number(m[3]) < 1 || Number(m[3]) > 65535) return false;
  return m[1] !== undefined ? isIP(m[1]) === 6 : isIP(m[2]!) === 4;
}

/** 10.0.0.1, ::1, 10.0.0.0/8, fd00::/8 */
export function isAddressOrCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split("/");
  const family = isIP(address ?? "");
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
