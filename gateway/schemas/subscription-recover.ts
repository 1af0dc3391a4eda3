// Recovering a subscription's failed deliveries, as POST …/{id}/recover takes
// and answers it.
import { z } from "zod";

const SINCE_EXAMPLE = "2026-01-15T09:00:00Z";
const badSince = `since: expected an RFC 3339 date-time, such as ${SINCE_EXAMPLE}`;
const DATE_TIME = z.iso.datetime({ offset: true });

export const RecoverBody = z
  .strictObject(
    {
      since: z
        .string({
          error: (iss) =>
            iss.input === undefined ? `since: required (an RFC 3339 date-time, such as ${SINCE_EXAMPLE})` : badSince,
        })
        .meta({ format: "date-time" })
        // RFC 3339 §5.6: "the "T" and "Z" characters in this syntax may alternatively be lower case "t" or "z"".
        .refine((since) => DATE_TIME.safeParse(since.toUpperCase()).success, { error: badSince })
        .describe("RFC 3339: the deliveries created at or after this time are recovered; not in the future"),
    },
    {
      error: (iss) =>
        iss.code === "unrecognized_keys"
          ? `unknown field ${JSON.stringify(String(iss.keys[0]).slice(0, 40))}; the body has since only`
          : "the body must be a JSON object",
    },
  )
  .describe("A JSON object with since")
  .meta({ examples: [{ since: SINCE_EXAMPLE }] });

export const Recovered = z
  .object({
    subscription_id: z.number().int().positive().describe("The subscription"),
    since: z.iso.datetime().describe("The since asked for, as the server read it (UTC)"),
    queued: z
      .number()
      .int()
      .min(0)
      .describe(
        "How many deliveries were queued: each gets one new attempt (a failed one waiting for its retry: that retry, now), oldest first",
      ),
  })
  .meta({
    id: "RecoveredDeliveries",
    description: "How many of a subscription's failed, given-up, cancelled or skipped deliveries were queued again",
  });

export const recoveredExample = { subscription_id: 42, since: "2026-01-15T09:00:00.000Z", queued: 17 };
