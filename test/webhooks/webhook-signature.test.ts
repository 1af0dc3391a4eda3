// The webhook signature (services/delivery/sender/signature.ts) against the
// `standardwebhooks` package a receiver verifies with: the same header value
// as the package's own sign(), for secrets of every length the platform and
// other senders use, bodies with non-ASCII text, and timestamps with
// milliseconds; its verify() accepts it, and refuses it under another secret.
import { randomBytes, randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { sign } from "../../services/delivery/sender/signature.js";

const bodies = [
  "",
  `{"type":"contact.created","data":{"id":"1","first_name":"Ada"}}`,
  `{"type":"contact.updated","data":{"first_name":"Zoë","last_name":"Ødegård 李","note":"🃏 \\u2028"}}`,
  "x".repeat(70_000),
];

describe("webhook signature", () => {
  it("is the standardwebhooks package's own signature, which its verify() accepts", () => {
    for (const bytes of [16, 24, 32, 64]) {
      const secret = `whsec_${randomBytes(bytes).toString("base64")}`;
      for (const body of bodies) {
        const id = randomUUID();
        const timestamp = new Date(Date.now() - Math.floor(Math.random() * 60_000));
        const header = sign(secret, id, timestamp, body);
        expect(header).toBe(new Webhook(secret).sign(id, timestamp, body));
        expect(header).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
        const headers = {
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
          "webhook-signature": header,
        };
        expect(new Webhook(secret).verify(body, headers, { jsonParse: false })).toBeUndefined();
        const other = `whsec_${randomBytes(bytes).toString("base64")}`;
        expect(() => new Webhook(other).verify(body, headers)).toThrow("No matching signature found");
      }
    }
  });

  it("takes a secret without its whsec_ prefix as the package does, and refuses an empty one", () => {
    const key = randomBytes(32).toString("base64");
    const at = new Date();
    expect(sign(key, "msg_1", at, "{}")).toBe(sign(`whsec_${key}`, "msg_1", at, "{}"));
    expect(sign(key, "msg_1", at, "{}")).toBe(new Webhook(key).sign("msg_1", at, "{}"));
    expect(() => sign("whsec_", "msg_1", at, "{}")).toThrow("cannot be empty");
  });
});
