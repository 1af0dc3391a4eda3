// The lean server's request headers (services/shared/rpc/request-headers.ts)
// answer every Headers operation as the Headers the server built before
// them did: each received header appended or set, HTTP/2's pseudo-headers
// left out.
import type http from "node:http";
import { describe, expect, it } from "vitest";
import { RequestHeaders } from "../services/shared/rpc/request-headers.js";

/** The Headers the lean server made until RequestHeaders. */
function built(received: http.IncomingHttpHeaders): Headers {
  const header = new Headers();
  for (const [key, value] of Object.entries(received)) {
    if (value === undefined || key.charCodeAt(0) === 58) continue;
    if (Array.isArray(value)) for (const v of value) header.append(key, v);
    else header.set(key, value);
  }
  return header;
}

/** What an operation answered, or the error it threw (its type and message). */
function outcome(op: () => unknown): unknown {
  try {
    return { value: op() };
  } catch (e) {
    return { threw: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

const RECEIVED: http.IncomingHttpHeaders[] = [
  {
    "content-type": "application/proto",
    "connect-protocol-version": "1",
    "connect-timeout-ms": "5000",
    authorization: "Bearer internal-credential-0123456789",
    "x-request-id": "req-1",
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "user-agent": "connect-es/2.0.0",
  },
  { ":path": "/bizcard.auth.v1.AuthService/ExchangeToken", ":method": "POST", host: "127.0.0.1:1234", "x-empty": "" },
  { "set-cookie": ["a=1", "b=2"], "x-list": ["one", "two"], "x-none": [], "x-undefined": undefined },
  // Not what Node's parser gives, but what a hand-made object could hold: Headers' own rules apply.
  { "x-spaced": "  padded\t", "x-inner": "a  b", "x-list-spaced": [" one", "two "] },
];

const NAMES = [
  "content-type",
  "Content-Type",
  "AUTHORIZATION",
  "x-request-id",
  "traceparent",
  "tracestate",
  "host",
  "x-empty",
  "set-cookie",
  "x-list",
  "x-none",
  "x-undefined",
  "x-spaced",
  "x-inner",
  "x-list-spaced",
  ":path",
  "bad name",
  "",
  "x-\u00e9",
];

describe("RequestHeaders", () => {
  it("answers get and has for every name as the built Headers do, a bad name with the same TypeError", () => {
    for (const received of RECEIVED) {
      const reference = built(received);
      for (const name of NAMES) {
        // A fresh one each time: reading must not depend on what was read before.
        expect(outcome(() => new RequestHeaders(received).get(name)), `get(${JSON.stringify(name)})`).toEqual(outcome(() => reference.get(name)));
        expect(outcome(() => new RequestHeaders(received).has(name)), `has(${JSON.stringify(name)})`).toEqual(outcome(() => reference.has(name)));
      }
    }
  });

  it("walks, and is changed, as the built Headers are", () => {
    for (const received of RECEIVED) {
      const walks: [string, (h: Headers) => unknown][] = [
        ["entries", (h) => [...h.entries()]],
        ["keys", (h) => [...h.keys()]],
        ["values", (h) => [...h.values()]],
        ["iterator", (h) => [...h]],
        ["forEach", (h) => {
          const seen: string[][] = [];
          h.forEach((value, key, parent) => seen.push([key, value, String(parent === h)]));
          return seen;
        }],
        ["getSetCookie", (h) => h.getSetCookie()],
        ["new Headers(it)", (h) => [...new Headers(h)]],
        ["set, then read", (h) => (h.set("x-request-id", "changed"), h.set("X-New", " new "), [h.get("x-request-id"), h.get("x-new"), [...h]])],
        ["append, then read", (h) => (h.append("x-list", "three"), h.append("x-request-id", "again"), [h.get("x-list"), h.get("x-request-id"), [...h]])],
        ["delete, then read", (h) => (h.delete("authorization"), h.delete("Content-Type"), [h.get("authorization"), h.has("content-type"), [...h]])],
        ["a read, then a write, then a read", (h) => [h.get("traceparent"), (h.set("traceparent", "replaced"), h.get("traceparent")), h.get("x-request-id")]],
        ["a bad write", (h) => outcome(() => h.set("bad name", "x"))],
      ];
      for (const [name, walk] of walks) {
        expect(walk(new RequestHeaders(received)), name).toEqual(walk(built(received)));
      }
    }
  });

  it("is a Headers", () => {
    const headers = new RequestHeaders({ "x-request-id": "req-1" });
    expect(headers).toBeInstanceOf(Headers);
    expect(Object.prototype.toString.call(headers)).toBe("[object Headers]");
  });
});
