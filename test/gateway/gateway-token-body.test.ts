// Every check POST /oauth/token makes on the body before it hands a grant to
// the auth service: size, media type, encoding, JSON shape, strict
// parameters, and bodies the gateway does not read at all.
import { describe, expect, it } from "vitest";
import {
  type Answer,
  base,
  call,
  encodings,
  expectError,
  expectNoStore,
  FORM,
  form,
  JSON_TYPE,
  token,
  useGatewaySuite,
} from "../support/gateway-suite.js";

useGatewaySuite();

describe("POST /oauth/token: the body", () => {
  it("refuses a body over 64 KiB with 413 payload_too_large", async () => {
    const formBody = form({
      grant_type: "client_credentials",
      client_id: "c",
      client_secret: "s",
      pad: "x".repeat(64 * 1024),
    });
    const a = await token(formBody, FORM);
    expectError(a, 413, "payload_too_large", /64 KiB/);
    expectNoStore(a);

    const jsonBody = JSON.stringify({ grant_type: "client_credentials", pad: "x".repeat(64 * 1024) });
    const b = await token(jsonBody, JSON_TYPE);
    expectError(b, 413, "payload_too_large");
    expectNoStore(b);
  });

  it("refuses an oversize body sent chunked, without a Content-Length", async () => {
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode("grant_type=client_credentials&pad="));
        if (sent >= 8) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const a = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": FORM },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expectError(a, 413, "payload_too_large");
    expectNoStore(a);
  });

  it("accepts a body just under the limit as far as the parameter checks", async () => {
    const body = form({ grant_type: "password", pad: "x".repeat(60 * 1024) });
    const a = await token(body, FORM);
    expectError(a, 400, "unsupported_grant_type");
  });

  it("refuses other media types with 415", async () => {
    for (const type of [
      "text/plain",
      "application/xml",
      "text/xml",
      "multipart/form-data; boundary=x",
      "application/octet-stream",
    ]) {
      const a = await token("grant_type=client_credentials", type);
      expectError(a, 415, "unsupported_media_type", /application\/json|x-www-form-urlencoded/);
      expectNoStore(a);
    }
  });

  it("refuses a body without a content type with 415", async () => {
    const res = await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new Blob(["grant_type=client_credentials"]), // a Blob without a type: fetch sends no Content-Type
    });
    const text = await res.text();
    const a: Answer = { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
    expect(a.headers.get("content-type")).toMatch(/^application\/json/);
    expectError(a, 415, "unsupported_media_type");
    expectNoStore(a);
  });

  it("accepts the content types with parameters (charset)", async () => {
    const a = await token(form({ grant_type: "nope" }), `${FORM}; charset=UTF-8`);
    expectError(a, 400, "unsupported_grant_type");
    const b = await token(JSON.stringify({ grant_type: "nope" }), `${JSON_TYPE}; charset=utf-8`);
    expectError(b, 400, "unsupported_grant_type");
  });

  it("refuses malformed JSON with 400 invalid_request", async () => {
    for (const body of ['{"grant_type": "client_credentials"', "{grant_type: 1}", "not json", '{"a":1}}']) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
      // The parser's own words (positions, token names) stay inside.
      expect((a.body as { error_description: string }).error_description).not.toMatch(/position|Unexpected token/);
    }
  });

  it("refuses an empty JSON body with 400 invalid_request", async () => {
    const a = await token("", JSON_TYPE);
    expectError(a, 400, "invalid_request");
    expectNoStore(a);
  });

  it("refuses a JSON body that is not an object of parameters with 400 invalid_request", async () => {
    for (const body of [
      '["grant_type", "client_credentials"]',
      '[{"grant_type": "client_credentials"}]',
      '"client_credentials"',
      "42",
      "true",
    ]) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
    }
  });

  it("refuses JSON parameters that are not strings with 400 invalid_request", async () => {
    for (const body of [
      { grant_type: ["client_credentials", "refresh_token"] },
      { grant_type: { nested: "x" } },
      { grant_type: "client_credentials", client_id: 42 },
      { grant_type: "client_credentials", client_id: "c", client_secret: true },
    ]) {
      const a = await token(JSON.stringify(body), JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
    }
  });
});

describe("bodies the gateway does not read", () => {
  it("a body sent to an unknown route is 404 (405 on a known path), whatever the body", async () => {
    const bodies: [string, RequestInit][] = [
      ["malformed JSON", { method: "POST", headers: { "content-type": JSON_TYPE }, body: "{{{" }],
      ["over 64 KiB", { method: "POST", headers: { "content-type": FORM }, body: `a=${"x".repeat(70 * 1024)}` }],
      ["another media type", { method: "PUT", headers: { "content-type": "application/xml" }, body: "<a/>" }],
      ["gzip", { method: "POST", headers: { "content-type": JSON_TYPE, "content-encoding": "gzip" }, body: "{}" }],
      ["not UTF-8", { method: "POST", headers: { "content-type": FORM }, body: Buffer.from([0x61, 0x3d, 0xff]) }],
    ];
    for (const [what, init] of bodies) {
      expectError(await call("/nope", init), 404, "not_found", undefined);
      const known = await call("/healthz", init);
      expect(known.status, what).toBe(405);
      expectError(known, 405, "method_not_allowed");
    }
  });

  it("a Content-Encoding other than identity is 415 with Accept-Encoding: identity (RFC 9110 §15.5.16)", async () => {
    for (const coding of ["gzip", "br", "deflate", "identity, gzip"]) {
      for (const enc of encodings) {
        const a = await enc.send({ grant_type: "client_credentials" }, { "content-encoding": coding });
        expectError(a, 415, "unsupported_media_type", /Content-Encoding/);
        expect(a.headers.get("accept-encoding")).toBe("identity");
        expectNoStore(a);
      }
    }
    // identity is no coding at all.
    expectError(
      await token(form({ grant_type: "nope" }), FORM, { "content-encoding": "identity" }),
      400,
      "unsupported_grant_type",
    );
  });
});

describe("POST /oauth/token: strict parameters", () => {
  it("a JSON name repeated is 400 invalid_request naming it, like a repeated form field", async () => {
    for (const [body, name] of [
      ['{"grant_type":"client_credentials","grant_type":"refresh_token"}', "grant_type"],
      ['{"grant_type":"client_credentials","client_id":"c","client_secret":"s","client_secret":"t"}', "client_secret"],
      // The same name, spelt with an escape: still the same name.
      ['{"grant_type":"client_credentials","grant\\u005ftype":"client_credentials"}', "grant_type"],
      // At any depth, after empty objects and arrays, and past strings holding quotes and backslashes.
      ['{"grant_type":"client_credentials","x":[{"a":1,"a":2}]}', "a"],
      ['{"x":{},"y":[],"grant_type":"a\\"\\\\","grant_type":"b"}', "grant_type"],
      ['{"client_id":"[{\\"","x":[["client_id"]],"client_id":"c"}', "client_id"],
    ] as const) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request", new RegExp(`\\b${name}\\b.*more than once`));
      expectNoStore(a);
    }
    // The same names in different objects are not repeats (the parameter checks come next).
    expectError(
      await token('{"grant_type":"nope","x":{"grant_type":1}}', JSON_TYPE),
      400,
      "invalid_request",
      /parameter x must be a string/,
    );
  });

  it("a body that is not UTF-8 is 400 invalid_request that says so", async () => {
    const notUtf8 = [
      [FORM, Buffer.concat([Buffer.from("grant_type=client_credentials&client_id="), Buffer.from([0xc3, 0x28])])],
      [
        JSON_TYPE,
        Buffer.concat([
          Buffer.from('{"grant_type":"client_credentials","client_id":"'),
          Buffer.from([0xff]),
          Buffer.from('"}'),
        ]),
      ],
      // An overlong encoding of "/" and a lone surrogate half.
      [JSON_TYPE, Buffer.concat([Buffer.from('{"grant_type":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])],
      [FORM, Buffer.concat([Buffer.from("grant_type="), Buffer.from([0xed, 0xa0, 0x80])])],
    ] as const;
    for (const [type, body] of notUtf8) {
      const a = await call("/oauth/token", { method: "POST", headers: { "content-type": type }, body });
      expectError(a, 400, "invalid_request", /UTF-8/);
      expectNoStore(a);
    }
    // Percent-encoded bytes of a form must decode to UTF-8 too.
    expectError(await token("grant_type=client_credentials&client_id=%FF", FORM), 400, "invalid_request", /UTF-8/);
    expectError(
      await token("grant_type=client_credentials&client_id=%zz", FORM),
      400,
      "invalid_request",
      /percent-encoding/,
    );
    // UTF-8 itself is read as such, raw or percent-encoded.
    expectError(await token(form({ grant_type: "Grüße" }), FORM), 400, "unsupported_grant_type");
    expectError(await token(JSON.stringify({ grant_type: "Grüße" }), JSON_TYPE), 400, "unsupported_grant_type");
  });
});
