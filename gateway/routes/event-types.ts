// GET /oauth/webhooks/event-types (public): the event catalog, an array of
// {"name", "description", "schema", "example"}, one per event type a
// subscription can name. Each schema is self-contained JSON Schema 2020-12
// of the whole body a subscriber receives, so an integration platform can
// build its field mapping before any event arrives (gateway/openapi/events.ts).
import type { FastifyInstance } from "fastify";
import { eventTypes } from "../openapi/events.js";

export const EVENT_TYPES_PATH = "/oauth/webhooks/event-types";

export function eventTypeRoutes(app: FastifyInstance): void {
  // Fixed for the life of the process: built once.
  const body = JSON.stringify(eventTypes());
  app.get(EVENT_TYPES_PATH, async (_request, reply) => {
    return reply.header("cache-control", "public, max-age=300").type("application/json; charset=utf-8").send(body);
  });
}
