// What each subscriptions route (subscriptions.ts) documents and validates.
import { z } from "zod";
import { HEADERS, IdParam, ListQuery, bearerErrors, empty, error, json, needs } from "../schemas/common.js";
import {
  CreateSubscriptionBody,
  Subscription as SubscriptionOut,
  SubscriptionCreated,
  SubscriptionList,
  UpdateSubscriptionBody,
  subscriptionExample,
} from "../schemas/subscriptions.js";

/** The list's page size when the query gives none, and the most it may ask for. */
export const LIST_DEFAULT = 50;
export const LIST_MAX = 100;

const TAGS = ["Webhook subscriptions"];
const SubscriptionId = z.object({ id: IdParam("id", "The subscription's id") });
const noStore = { "cache-control": HEADERS.noStore };
const badId = error(
  "The id is not a positive integer",
  "invalid_request",
  'id: expected a positive integer, not "abc"',
);
const notFound = error("No such subscription of this token's pair", "not_found", "subscription 42 not found");
const wrongType = error(
  "The body is not application/json",
  "unsupported_media_type",
  "send the subscription as application/json",
);
const badBody = error(
  "A field is missing, unknown or not valid (a target_url not https, or one that resolves to a private address, …)",
  "invalid_request",
  "target_url: required",
);
const lacksContacts = error(
  "The token lacks webhooks:write or contacts:read",
  "insufficient_scope",
  "this request needs the scope contacts:read",
  { "www-authenticate": HEADERS.wwwAuthenticate },
);
const unreachable = error(
  "The target_url's host could not be resolved in time",
  "temporarily_unavailable",
  "the target's DNS did not answer; try again",
  { "retry-after": HEADERS.retryAfter },
);

export const SCHEMAS = {
  list: {
    operationId: "listSubscriptions",
    summary: "List this application's subscriptions",
    tags: TAGS,
    security: needs("webhooks:read"),
    querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
    response: {
      200: json("One page of subscriptions", SubscriptionList, [subscriptionExample], {
        ...noStore,
        link: HEADERS.link,
      }),
      400: error("limit or cursor is not valid", "invalid_request", "limit: expected a whole number from 1 to 100"),
      ...bearerErrors("webhooks:read"),
    },
  },
  create: {
    operationId: "createSubscription",
    summary: "Subscribe a target URL to an event type",
    description:
      "Needs webhooks:write and contacts:read (every event is a contact event). Creating the same (target_url, event_type) again answers 200 with the existing subscription, without its secret.",
    tags: TAGS,
    security: needs("webhooks:write", "contacts:read"),
    consumes: ["application/json"],
    body: CreateSubscriptionBody,
    response: {
      200: json(
        "The same subscription existed already (no secret: it was shown when it was created)",
        SubscriptionOut,
        subscriptionExample,
        noStore,
      ),
      201: json(
        "Created; the secret is in this answer only",
        SubscriptionCreated,
        { ...subscriptionExample, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
        { ...noStore, location: HEADERS.location },
      ),
      400: badBody,
      ...bearerErrors("webhooks:write"),
      403: lacksContacts,
      415: wrongType,
      503: unreachable,
    },
  },
  get: {
    operationId: "getSubscription",
    summary: "Read one subscription",
    tags: TAGS,
    security: needs("webhooks:read"),
    params: SubscriptionId,
    response: {
      200: json("The subscription", SubscriptionOut, subscriptionExample, noStore),
      400: badId,
      ...bearerErrors("webhooks:read"),
      404: notFound,
    },
  },
  update: {
    operationId: "updateSubscription",
    summary: "Change a subscription, or re-enable a disabled one",
    description: "Needs webhooks:write and contacts:read. Any PUT re-enables a disabled subscription.",
    tags: TAGS,
    security: needs("webhooks:write", "contacts:read"),
    consumes: ["application/json"],
    params: SubscriptionId,
    body: UpdateSubscriptionBody,
    response: {
      200: json("The subscription as it is now", SubscriptionOut, subscriptionExample, noStore),
      400: badBody,
      ...bearerErrors("webhooks:write"),
      403: lacksContacts,
      404: notFound,
      409: error(
        "Another of the pair's subscriptions already has this target_url and event_type",
        "conflict",
        "a subscription with this target_url and event_type already exists (id 41)",
      ),
      415: wrongType,
      503: unreachable,
    },
  },
  delete: {
    operationId: "deleteSubscription",
    summary: "Delete a subscription",
    tags: TAGS,
    security: needs("webhooks:write"),
    params: SubscriptionId,
    response: {
      204: empty("Deleted", noStore),
      400: badId,
      ...bearerErrors("webhooks:write"),
      404: notFound,
    },
  },
};
