// The event catalog: what a subscriber of each event type receives, as
// schemas and examples, for GET /oauth/webhooks/event-types and the OpenAPI
// `webhooks`. The body is built by services/delivery/fan-out/contact-fan-out.ts.
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import { EVENT_TYPE_NAMES, type EventTypeName } from "../../services/shared/event-types.js";
import { CONTACT_EXAMPLE, ContactSchema } from "./contact-schema.js";
import { selfContainedJsonSchema } from "./json-schema.js";

type JsonSchema = Record<string, unknown>;

/** Each event type's words, and the time and id (a UUIDv7 of that time, as the platform makes them) of its example. */
const EVENTS: Record<EventTypeName, { summary: string; description: string; time: string; id: string }> = {
  "contact.created": {
    summary: "A contact was created",
    description: "A contact was created in the organisation. `data` is the new contact.",
    time: "2026-11-22T13:45:00.000Z",
    id: "01a20380-c364-7a2b-8c3d-5e6f7a8b9c0d",
  },
  "contact.updated": {
    summary: "A contact was changed",
    description:
      "A contact of the organisation was changed. `data` is the contact as it is after the change (all its fields, not only the changed ones).",
    time: "2026-11-22T14:02:31.517Z",
    id: "01a20390-cee1-7e6f-9a0b-1c2d3e4f5a6b",
  },
};

/** The body of one event: `{"type", "timestamp", "data"}`, as webhookBody writes it. */
function eventSchema(name: EventTypeName) {
  return z
    .object({
      type: z.literal(name).describe("The event type; the same as the subscription's event_type."),
      timestamp: z.iso.datetime().describe("When the change happened (RFC 3339, UTC). The same on every retry."),
      data: ContactSchema,
    })
    .describe(EVENTS[name].description);
}

type EventBody = z.output<ReturnType<typeof eventSchema>>;

function exampleEvent(name: EventTypeName): EventBody {
  const timestamp = EVENTS[name].time;
  const data =
    name === "contact.created"
      ? CONTACT_EXAMPLE
      : { ...CONTACT_EXAMPLE, job_title: "Chief Scientist", updated_at: timestamp };
  return { type: name, timestamp, data };
}

/** A made-up secret the examples are signed with, so a receiver can try its verification on them. */
export const EXAMPLE_SECRET = `whsec_${Buffer.from("bizcard example secret, not real").toString("base64")}`;
/** The three Standard Webhooks headers of the example delivery of `name` (signed with EXAMPLE_SECRET). */
function exampleHeaders(name: EventTypeName) {
  const { time, id } = EVENTS[name];
  const at = new Date(time);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(EXAMPLE_SECRET).sign(id, at, JSON.stringify(exampleEvent(name))),
  };
}

/** The catalog: every event type, with the self-contained JSON Schema and an example of its whole body. */
export function eventTypes() {
  return EVENT_TYPE_NAMES.map((name) => ({
    name,
    description: EVENTS[name].description,
    schema: selfContainedJsonSchema(eventSchema(name)),
    example: exampleEvent(name),
  }));
}

type EventType = ReturnType<typeof eventTypes>[number];

/** The answer of GET /oauth/webhooks/event-types, as a zod schema (for the route's documented 200). */
export const EventTypesAnswerSchema = z
  .array(
    z.object({
      name: z
        .enum(EVENT_TYPE_NAMES as [EventTypeName, ...EventTypeName[]])
        .describe("The event type, as a subscription's event_type names it."),
      description: z.string().describe("What happened when this event is sent."),
      schema: z
        .record(z.string(), z.unknown())
        .describe("Self-contained JSON Schema 2020-12 of the whole body a subscriber receives."),
      example: z
        .union(
          EVENT_TYPE_NAMES.map((name) => eventSchema(name)) as [
            ReturnType<typeof eventSchema>,
            ...ReturnType<typeof eventSchema>[],
          ],
        )
        .describe("A whole body."),
    }),
  )
  .describe("One entry per event type.");

const VERIFY_TEXT = [
  "Each delivery is a `POST` to the subscription's `target_url` with `Content-Type: application/json` and `User-Agent: bizcard-webhooks/1`, signed the [Standard Webhooks](https://www.standardwebhooks.com/) way.",
  "",
  "**Verify before trusting the body.** The subscription's `secret` (`whsec_…`) is shown once, in the `201` answer of `POST /oauth/webhooks/subscriptions`; keep it. " +
    "`webhook-signature` is `v1,<base64>`: the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` under the base64-decoded part of the secret after `whsec_` " +
    "(a space-separated list when there are several: after `POST /oauth/webhooks/subscriptions/{id}/rotate-secret`, until its `previous_secret_expires_at`, `v1,<new> v1,<old>`, so either secret verifies). Compare in constant time, over the raw bytes as received (not re-serialised JSON), " +
    "and reject a `webhook-timestamp` more than 5 minutes from your clock (replays). " +
    "The `standardwebhooks` libraries do all of this: `new Webhook(secret).verify(rawBody, headers)`. " +
    `The examples here are signed with the made-up secret \`${EXAMPLE_SECRET}\`, so you can try your check on them.`,
  "",
  "**Answer quickly** (within 10 seconds): any `2xx` means delivered; `410 Gone` deletes the subscription (REST Hooks); " +
    "anything else (another status, including `3xx`, which is not followed; a timeout; a refused connection) is retried " +
    "5 s, 30 s, 2 min, 10 min, 30 min, 2 h, 6 h and 12 h after each failure (each ±20 %), honouring `Retry-After` up to 1 hour, then given up. " +
    "A subscription that has failed every attempt for days is disabled. Every attempt is listed by `GET /oauth/webhooks/subscriptions/{id}/deliveries`.",
  "",
  "**At least once:** a retry sends the same body under the same `webhook-id`, with a fresh `webhook-timestamp` and signature; deduplicate by `webhook-id`. " +
    "Events can arrive out of order: use `timestamp` and `data.updated_at`.",
].join("\n");

export const WEBHOOK_TAG = {
  name: "Webhook events",
  description: "What a subscription's target_url receives: one signed POST per event",
};

function headerParameter(name: string, description: string, schema: JsonSchema, example: string) {
  return { name, in: "header" as const, required: true, description, schema, example };
}

/** One entry of the OpenAPI 3.1 `webhooks` object: the POST a subscriber of `name` receives. */
function webhookPathItem(type: EventType) {
  const headers = exampleHeaders(type.name);
  const { $schema: _dialect, ...schema } = type.schema;
  return {
    post: {
      operationId: `${type.name.replace(/\.(\w)/g, (_m, c: string) => c.toUpperCase())}Event`,
      summary: EVENTS[type.name].summary,
      description: `${type.description}\n\n${VERIFY_TEXT}`,
      tags: [WEBHOOK_TAG.name],
      security: [],
      parameters: [
        headerParameter(
          "webhook-id",
          "The event's id (a UUID): the same on every retry of this event. Deduplicate by it; it is also `event_id` in the delivery log.",
          { type: "string", format: "uuid" },
          headers["webhook-id"],
        ),
        headerParameter(
          "webhook-timestamp",
          "When this attempt was signed, in Unix seconds. Reject a value more than 5 minutes from your clock.",
          { type: "string", pattern: "^[0-9]+$" },
          headers["webhook-timestamp"],
        ),
        headerParameter(
          "webhook-signature",
          "`v1,<base64>`: the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` under the subscription's secret. Several signatures are separated by spaces; one valid is enough.",
          { type: "string", pattern: "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$" },
          headers["webhook-signature"],
        ),
        headerParameter(
          "traceparent",
          "W3C Trace Context: the trace of the change that caused this event (the trace id of the request that created or updated the contact; a new trace when that request had none), with this attempt's own parent id. Correlate by the trace id; it is not signed.",
          { type: "string", pattern: "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$" },
          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
      ],
      requestBody: {
        required: true,
        description: `The \`${type.name}\` event.`,
        content: { "application/json": { schema, example: type.example } },
      },
      responses: {
        "2XX": {
          description:
            "Accepted: the event is delivered and not sent again. The answer's body is read up to 64 KiB and ignored.",
        },
        "410": {
          description: "Gone: the subscription is deleted (REST Hooks unsubscribe); nothing more is sent to it.",
        },
        default: {
          description:
            "Anything else (or no answer within 10 seconds): the event is sent again later, on the retry schedule above.",
        },
      },
    },
  };
}

type WebhookPathItem = ReturnType<typeof webhookPathItem>;

/**
 * The OpenAPI 3.1 `webhooks` object (OpenAPI 3.1 §4.8.1: "The incoming
 * webhooks that MAY be received as part of this API").
 */
export function webhooksObject(): Record<EventTypeName, WebhookPathItem> {
  return Object.fromEntries(eventTypes().map((type) => [type.name, webhookPathItem(type)])) as Record<
    EventTypeName,
    WebhookPathItem
  >;
}
