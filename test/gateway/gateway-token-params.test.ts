// Every check POST /oauth/token makes on the parameters before it hands a
// grant to the auth service, sent form-encoded and as JSON, and an auth
// service that cannot be reached.
import { describe, expect, it } from "vitest";
import {
  basic,
  brokenBase,
  call,
  encodings,
  expectError,
  expectNoStore,
  FORM,
  form,
  token,
  useGatewaySuite,
} from "../support/gateway-suite.js";

useGatewaySuite();

describe("POST /oauth/token: parameters", () => {
  for (const enc of encodings) {
    describe(`sent as ${enc.name}`, () => {
      it("without grant_type is 400 invalid_request", async () => {
        const a = await enc.send({ client_id: "c", client_secret: "s" });
        expectError(a, 400, "invalid_request", /grant_type/);
        expectNoStore(a);
      });

      it("with an empty grant_type is treated as without (RFC 6749 §3.1)", async () => {
        const a = await enc.send({ grant_type: "", client_id: "c", client_secret: "s" });
        expectError(a, 400, "invalid_request", /grant_type/);
      });

      it("with an unknown grant_type is 400 unsupported_grant_type", async () => {
        for (const grant of [
          "password",
          "implicit",
          "urn:ietf:params:oauth:grant-type:device_code",
          "CLIENT_CREDENTIALS",
        ]) {
          const a = await enc.send({ grant_type: grant, client_id: "c", client_secret: "s" });
          expectError(a, 400, "unsupported_grant_type", /authorization_code/);
          expectNoStore(a);
        }
      });

      it("with Basic and client_secret in the body is 400 invalid_request", async () => {
        const a = await enc.send(
          { grant_type: "client_credentials", client_secret: "s" },
          { authorization: basic("c", "s") },
        );
        expectError(a, 400, "invalid_request", /one client authentication method/);
        expectNoStore(a);
        expect(a.headers.get("www-authenticate")).toBeNull();
      });

      it("with Basic and a different client_id in the body is 400 invalid_request", async () => {
        const a = await enc.send(
          { grant_type: "client_credentials", client_id: "other" },
          { authorization: basic("c", "s") },
        );
        expectError(a, 400, "invalid_request", /client_id/);
        expectNoStore(a);
      });

      it("with client_secret but no client_id is 400 invalid_request", async () => {
        const a = await enc.send({ grant_type: "client_credentials", client_secret: "s" });
        expectError(a, 400, "invalid_request", /client_id/);
        expectNoStore(a);
      });

      it("without any client credentials is 401 invalid_client with WWW-Authenticate", async () => {
        for (const grant of ["client_credentials", "authorization_code", "refresh_token"]) {
          const a = await enc.send({ grant_type: grant });
          expectError(a, 401, "invalid_client");
          expectNoStore(a);
          expect(a.headers.get("www-authenticate")).toMatch(/^Basic realm="[^"]+"/);
        }
      });

      it("with malformed Basic credentials is 401 invalid_client with WWW-Authenticate", async () => {
        const a = await enc.send(
          { grant_type: "client_credentials" },
          { authorization: `Basic ${Buffer.from("no-colon").toString("base64")}` },
        );
        expectError(a, 401, "invalid_client");
        expectNoStore(a);
        expect(a.headers.get("www-authenticate")).toMatch(/^Basic /);
      });

      it("with well-formed parameters reaches the auth service, which refuses an unknown client (401 invalid_client)", async () => {
        // The auth service's own description: the gateway passed the request on.
        const post = await enc.send({ grant_type: "client_credentials", client_id: "c", client_secret: "s" });
        expectError(post, 401, "invalid_client", /client authentication failed/);
        expectNoStore(post);
        expect(post.headers.get("www-authenticate")).toMatch(/^Basic realm="[^"]+"/);
        const viaBasic = await enc.send(
          { grant_type: "refresh_token", refresh_token: "r" },
          { authorization: basic("c", "s") },
        );
        expectError(viaBasic, 401, "invalid_client", /client authentication failed/);
        expectNoStore(viaBasic);
        const publicClient = await enc.send({
          grant_type: "authorization_code",
          client_id: "c",
          code: "x",
          redirect_uri: "https://a.test/cb",
        });
        expectError(publicClient, 401, "invalid_client", /client authentication failed/);
        expectNoStore(publicClient);
      });
    });
  }

  it("an auth service that cannot be reached is 503 temporarily_unavailable with Retry-After, without internals", async () => {
    const a = await call(
      "/oauth/token",
      {
        method: "POST",
        headers: { "content-type": FORM },
        body: form({ grant_type: "client_credentials", client_id: "c", client_secret: "s" }),
      },
      brokenBase,
    );
    expectError(a, 503, "temporarily_unavailable");
    expectNoStore(a);
    expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(a.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|\[unavailable\]/);
    // The checks the gateway makes itself still answer as usual (grant_type is the auth service's).
    expectError(
      await call(
        "/oauth/token",
        { method: "POST", headers: { "content-type": FORM }, body: "grant_type=x&grant_type=y" },
        brokenBase,
      ),
      400,
      "invalid_request",
    );
  });

  it("a parameter repeated in a form body is 400 invalid_request", async () => {
    const a = await token("grant_type=a&grant_type=b", FORM);
    expectError(a, 400, "invalid_request", /grant_type/);
    expectNoStore(a);
    const same = await token(
      "grant_type=client_credentials&grant_type=client_credentials&client_id=c&client_secret=s",
      FORM,
    );
    expectError(same, 400, "invalid_request", /grant_type/);
    const secret = await token(
      form([
        ["grant_type", "client_credentials"],
        ["client_id", "c"],
        ["client_secret", "s"],
        ["client_secret", "t"],
      ]),
      FORM,
    );
    expectError(secret, 400, "invalid_request", /client_secret/);
  });

  it("an empty form body is 400 invalid_request", async () => {
    const a = await token("", FORM);
    expectError(a, 400, "invalid_request", /grant_type/);
    expectNoStore(a);
  });

  it("Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1)", async () => {
    // "c%3Aid" decodes to "c:id", so a body client_id of "c:id" is the same client: no mismatch, on to the service.
    const a = await token(form({ grant_type: "client_credentials", client_id: "c:id" }), FORM, {
      authorization: basic("c%3Aid", "s%20t"),
    });
    expectError(a, 401, "invalid_client", /client authentication failed/);
    const bad = await token(form({ grant_type: "client_credentials" }), FORM, { authorization: basic("c%zz", "s") });
    expectError(bad, 401, "invalid_client");
    expect(bad.headers.get("www-authenticate")).toMatch(/^Basic /);
  });
});
