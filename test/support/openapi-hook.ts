// Every answer a test's gateway gives is checked against the gateway's own
// OpenAPI document (openapi-check.ts), whoever asked: the api-client's call(),
// a plain fetch, a page test. An answer that drifts from the document is
// replaced by a 500 {"error":"openapi_drift"} naming each problem, so the
// test that received it fails and says why; the problems are also kept.
import type { FastifyInstance } from "fastify";
import { isHidden } from "../../gateway/openapi/document.js";
import { openapiChecker, type OpenApiChecker } from "./openapi-check.js";

export const DRIFT = "openapi_drift";

export function checkAnswersAgainstDocument(app: FastifyInstance, problems: string[] = []): string[] {
  let checker: OpenApiChecker | undefined;
  app.addHook("onSend", async (request, reply, payload) => {
    const route = request.routeOptions.url;
    // No route (404, 405: the not-found handler), HEAD, and the pages left out of the document on purpose.
    if (!route || request.method === "HEAD" || isHidden(route)) return payload;
    checker ??= openapiChecker(app.swagger() as Record<string, unknown>);
    if (!checker.documents(request.method, request.url)) return payload;
    if (payload != null && typeof payload !== "string" && !Buffer.isBuffer(payload)) return payload; // a stream
    const body = payload == null ? "" : String(payload);
    const found = checker.check(request.method, request.url, {
      status: reply.statusCode,
      headers: reply.getHeaders(),
      body,
    });
    if (found.length === 0) return payload;
    problems.push(...found);
    console.error(`answer not as documented: ${found.join("; ")}`);
    reply.code(500).header("content-type", "application/json; charset=utf-8");
    return JSON.stringify({ error: DRIFT, error_description: found.join("; ") });
  });
  return problems;
}
