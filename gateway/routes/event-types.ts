// GET /oauth/webhooks/event-types (public): the event catalog, one entry per
// event type with the self-contained JSON Schema of its body, for an
// integration platform's field mapping before any event arrives.
import type { FastifyInstance } from "fastify";
import { EventTypesAnswerSchema, eventTypes } from "../openapi/events.js";
import { DEFAULT_ERROR, json } from "../schemas/common.js";

export const EVENT_TYPES_PATH = "/oauth/webhooks/event-types";

const SCHEMA = {
  operationId: "listEventTypes",
  summary: "The event catalog: every event type a subscription can name, with the JSON Schema of its body",
  tags: ["Webhook subscriptions"],
  security: [],
  response: {
    200: json("One entry per event type", EventTypesAnswerSchema, eventTypes(), {
      "cache-control": {
        type: "string",
        description: "The catalog changes only with a new version of the platform",
        required: true,
      },
    }),
    400: DEFAULT_ERROR,
    default: DEFAULT_ERROR,
  },
};

export function eventTypeRoutes(app: FastifyInstance): void {
  // Fixed for the life of the process: built once.
  const body = JSON.stringify(eventTypes());
  app.get(EVENT_TYPES_PATH, { schema: SCHEMA }, async (_request, reply) => {
    return reply.header("cache-control", "public, max-age=300").type("application/json; charset=utf-8").send(body);
  });
}
