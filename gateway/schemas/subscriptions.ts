// Webhook subscriptions and their delivery log, as the REST routes answer them.
import { z } from "zod";
import { EVENT_TYPE_NAMES } from "../../services/shared/event-types.js";

const EventTypeName = z.enum(EVENT_TYPE_NAMES as [string, ...string[]]).describe("The event a subscription receives");
const Time = z.iso.datetime();

export const Subscription = z
  .object({
    id: z.number().int().positive(),
    target_url: z.string().describe("Where each event is POSTed: an absolute https URL, at most 2048 characters"),
    event_type: EventTypeName,
    created_at: Time,
    updated_at: Time,
    disabled_at: Time.nullable().describe(
      "Set while disabled (every delivery attempt failed for a while); a PUT re-enables it",
    ),
    disabled_reason: z.string().nullable().describe("Why it was disabled; null while enabled"),
    ordered: z
      .boolean()
      .describe(
        "Ordered delivery: its events are POSTed one at a time, in the order they committed, across every delivery process; a failing one holds back those behind it until it succeeds or gives up (false: in parallel, a later event may arrive first)",
      ),
    previous_secret_expires_at: Time.nullable().describe(
      "Set after a secret rotation while the old secret still signs too: until when",
    ),
    throttled_until: Time.nullable().describe(
      "Set while the target asked for a pause (429, 502, 503 or 504 with Retry-After): nothing is sent before then, a retry included. Null when the delivery service could not be asked (the subscription is answered anyway)",
    ),
    in_flight_cap: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe(
        "Set while the target's answers lowered it (502, 503 or 504 without Retry-After, or a run of timeouts, each wave halving it): the most POSTs in flight to the subscription now; each success adds one back. Null at the configured cap (WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION)",
      ),
    blocked_since: Time.nullable().describe(
      "Ordered subscriptions: set while the oldest pending delivery (the head, in commit order) has failed and waits for its retry, holding back those behind it: its first failed attempt's time",
    ),
    blocked_delivery_id: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe("The head delivery that blocks (with blocked_since): the one to look for in the log, or to retry"),
  })
  .meta({
    id: "Subscription",
    description: "A webhook subscription of the token's (organisation, client application) pair",
  });

export const SubscriptionCreated = z
  .object({
    ...Subscription.shape,
    secret: z.string().describe("The signing secret (whsec_…): shown once, in this answer, never again"),
  })
  .meta({ id: "SubscriptionCreated", description: "A new subscription, with its signing secret" });

export const SubscriptionList = z.array(Subscription).describe("The pair's subscriptions, newest first: one page");

/** The read-only fields of a subscription: a body may send them back as read, and they are ignored. */
const READ_ONLY_FIELDS = [
  "id",
  "secret",
  "created_at",
  "updated_at",
  "disabled_at",
  "disabled_reason",
  "previous_secret_expires_at",
  "throttled_until",
  "in_flight_cap",
  "blocked_since",
  "blocked_delivery_id",
];
const BODY_NOTE = `A JSON object. The read-only fields of a subscription (${READ_ONLY_FIELDS.join(", ")}) may be sent back as read and are ignored; any other field is a 400.`;
const readOnly = Object.fromEntries(
  READ_ONLY_FIELDS.map((name) => [name, z.unknown().optional().meta({ readOnly: true })]),
);
const names = EVENT_TYPE_NAMES.join(" or ");

/** A subscription body's fields; `required`: a create's (both fields must be there). */
function body(required: boolean) {
  const missing = (name: string, text: string) => (iss: { input?: unknown }) =>
    iss.input === undefined ? text : `${name}: expected a string`;
  const targetUrl = z.string({ error: missing("target_url", "target_url: required") });
  const eventType = z.enum(EVENT_TYPE_NAMES as [string, ...string[]], {
    error: (iss) =>
      iss.input === undefined
        ? `event_type: required (${names})`
        : typeof iss.input === "string"
          ? `event_type: expected ${names}`
          : "event_type: expected a string",
  });
  const ordered = z
    .boolean({ error: "ordered: expected true or false" })
    .optional()
    .describe(
      "true: events are sent one at a time, in commit order (a failing one holds back those behind it); false by default on create, unchanged when absent on PUT",
    );
  return z.strictObject(
    {
      target_url: required ? targetUrl : targetUrl.optional(),
      event_type: required ? eventType : eventType.optional(),
      ordered,
      ...readOnly,
    },
    {
      error: (iss) =>
        iss.code === "unrecognized_keys"
          ? `unknown field ${JSON.stringify(String(iss.keys[0]).slice(0, 40))}; a subscription has target_url, event_type and ordered`
          : "the body must be a JSON object",
    },
  );
}

export const CreateSubscriptionBody = body(true)
  .describe(BODY_NOTE)
  .meta({ examples: [{ target_url: "https://hooks.example.com/bizcard", event_type: "contact.created" }] });

export const UpdateSubscriptionBody = body(false)
  .describe(
    `${BODY_NOTE} Fields left out keep their value; an empty object (or no body) changes nothing but re-enables a disabled subscription.`,
  )
  .meta({ examples: [{ target_url: "https://hooks.example.com/bizcard/v2" }] });

export const subscriptionExample = {
  id: 42,
  target_url: "https://hooks.example.com/bizcard",
  event_type: "contact.created",
  created_at: "2026-01-15T09:30:00.000Z",
  updated_at: "2026-01-15T09:30:00.000Z",
  disabled_at: null,
  disabled_reason: null,
  ordered: false,
  previous_secret_expires_at: null,
  throttled_until: null,
  in_flight_cap: null,
  blocked_since: null,
  blocked_delivery_id: null,
};

export const Attempt = z
  .object({
    id: z.uuid().describe("The attempt"),
    delivery_id: z
      .number()
      .int()
      .positive()
      .describe("The delivery (one event for this subscription) it belongs to: what the retry route takes"),
    event_id: z.string().describe("The event's id: the webhook-id header the receiver got, the same on every attempt"),
    event_type: EventTypeName,
    attempt: z
      .number()
      .int()
      .min(0)
      .describe(
        "1 for the first POST of the delivery, 2 for its first retry, …; 0 for a skipped event or a cancelled delivery (nothing was sent)",
      ),
    status_code: z.number().int().nullable().describe("The HTTP status the receiver answered; null when none came"),
    outcome: z
      .enum(["succeeded", "failed", "gave_up", "gone", "skipped", "cancelled"])
      .describe(
        '"failed" is retried at next_retry_at (unless a later "cancelled" line says otherwise); "gone": the receiver answered 410; ' +
          '"skipped": the event happened while the subscription was disabled, nothing was sent; "cancelled": the delivery was due while its subscription was disabled or deleted, nothing was sent and no retry follows',
      ),
    error: z
      .string()
      .nullable()
      .describe(
        'null on success; else "HTTP <status>", "timeout: …", "refused: …", "network: …", "skipped: the subscription was disabled" or "cancelled: the subscription was disabled"',
      ),
    duration_ms: z.number().int().min(0),
    attempted_at: Time,
    next_retry_at: Time.nullable().describe(
      "When the next attempt of this delivery was planned after this one; null when none was",
    ),
  })
  .meta({ id: "DeliveryAttempt", description: "One POST of one event to the subscription's target_url" });

export const AttemptList = z.array(Attempt).describe("Newest first");

export const Delivery = z
  .object({
    id: z.number().int().positive(),
    event_id: z.string(),
    event_type: EventTypeName,
    subscription_id: z.number().int().positive(),
    status: z
      .enum(["pending", "succeeded", "gave_up", "gone", "cancelled", "skipped"])
      .describe(
        '"cancelled": not sent, the subscription was disabled or deleted when it was due; "skipped": the event happened while the subscription was disabled',
      ),
    attempts: z.number().int().min(0).describe("Attempts made so far"),
    status_code: z.number().int().nullable().describe("Of the last attempt"),
    error: z.string().nullable().describe("Of the last attempt"),
    next_retry_at: Time.nullable().describe(
      "While pending: when it is sent next; now when a worker is sending it (the retry route's answer: when the retry was taken); never before the end of its subscription's pause (throttled_until); for an ordered subscription's delivery behind its head, not before the head's next attempt",
    ),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: "Delivery", description: "One event for one subscription, across its attempts" });

export const attemptExample = {
  id: "019bc0fe-7420-7c4e-9d3f-2f1a7b9c8e01",
  delivery_id: 7,
  event_id: "019bc0fd-89c3-7a3b-9c5d-7e8f9a0b1c2d",
  event_type: "contact.created",
  attempt: 1,
  status_code: 500,
  outcome: "failed",
  error: "HTTP 500",
  duration_ms: 41,
  attempted_at: "2026-01-15T09:31:00.000Z",
  next_retry_at: "2026-01-15T09:31:05.000Z",
};

export const deliveryExample = {
  id: 7,
  event_id: "019bc0fd-89c3-7a3b-9c5d-7e8f9a0b1c2d",
  event_type: "contact.created",
  subscription_id: 42,
  status: "pending",
  attempts: 1,
  status_code: 500,
  error: "HTTP 500",
  next_retry_at: "2026-01-15T09:32:00.000Z",
  created_at: "2026-01-15T09:31:00.000Z",
  updated_at: "2026-01-15T09:32:00.000Z",
};
