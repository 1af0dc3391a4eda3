// Dynamic client registration (RFC 7591) at POST /oauth/register, what it
// refuses: bad metadata refused with RFC 7591 §3.2.2's codes and nothing
// stored; the rules of native and web applications; the limit per address.
// Each test registers from addresses of its own (X-Forwarded-For from a
// trusted loopback proxy), so the limit of one test never reaches another.
import { describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import {
  clientCount,
  freshAddress,
  LIMIT,
  register,
  registered,
  useRegistrationSuite,
} from "../support/registration-suite.js";

useRegistrationSuite();

describe("bad metadata changes nothing", () => {
  const cases: [string, unknown, string, RegExp][] = [
    [
      "redirect_uris not an array",
      { redirect_uris: "https://a.example/cb" },
      "invalid_client_metadata",
      /^redirect_uris: expected an array of strings$/,
    ],
    [
      "redirect_uris of numbers",
      { redirect_uris: [1] },
      "invalid_client_metadata",
      /^redirect_uris: expected an array of strings$/,
    ],
    [
      "client_name a number",
      { redirect_uris: ["https://a.example/cb"], client_name: 7 },
      "invalid_client_metadata",
      /^client_name: expected a string$/,
    ],
    ["a body that is not an object", [], "invalid_client_metadata", /JSON object/],
    ["no redirect_uris", { client_name: "x" }, "invalid_redirect_uri", /at least one/],
    ["a relative redirect URI", { redirect_uris: ["/cb"] }, "invalid_redirect_uri", /not an absolute URI/],
    ["a fragment", { redirect_uris: ["https://a.example/cb#f"] }, "invalid_redirect_uri", /fragment/],
    ["http off loopback", { redirect_uris: ["http://a.example/cb"] }, "invalid_redirect_uri", /https/],
    ["a javascript: URI", { redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri", /https URL/],
    [
      "an unknown auth method",
      { redirect_uris: ["https://a.example/cb"], token_endpoint_auth_method: "private_key_jwt" },
      "invalid_client_metadata",
      /token_endpoint_auth_method/,
    ],
    [
      "client_credentials",
      { redirect_uris: ["https://a.example/cb"], grant_types: ["authorization_code", "client_credentials"] },
      "invalid_client_metadata",
      /client_credentials/,
    ],
    [
      "implicit",
      { redirect_uris: ["https://a.example/cb"], grant_types: ["implicit"] },
      "invalid_client_metadata",
      /unsupported implicit/,
    ],
    [
      "refresh_token alone",
      { redirect_uris: ["https://a.example/cb"], grant_types: ["refresh_token"] },
      "invalid_client_metadata",
      /authorization_code/,
    ],
    [
      "response type token",
      { redirect_uris: ["https://a.example/cb"], response_types: ["token"] },
      "invalid_client_metadata",
      /response_types/,
    ],
    [
      "an unknown scope",
      { redirect_uris: ["https://a.example/cb"], scope: "contacts:read contacts:delete" },
      "invalid_client_metadata",
      /^scope: unknown contacts:delete/,
    ],
    [
      "an unknown application_type",
      { redirect_uris: ["https://a.example/cb"], application_type: "desktop" },
      "invalid_client_metadata",
      /application_type/,
    ],
    [
      "a client_uri that is not https",
      { redirect_uris: ["https://a.example/cb"], client_uri: "javascript:alert(1)" },
      "invalid_client_metadata",
      /client_uri/,
    ],
    [
      "an empty client_name",
      { redirect_uris: ["https://a.example/cb"], client_name: "  " },
      "invalid_client_metadata",
      /client_name/,
    ],
  ];
  it.each(cases)("%s", async (_name, body, error, description) => {
    const before = await clientCount();
    const res = await register(body);
    expect(res.headers.get("cache-control")).toBe("no-store");
    await expectError(res, 400, error, description);
    expect(await clientCount()).toBe(before);
  });

  it("a body that is not JSON is 415, naming JSON only", async () => {
    const jsonOnly = /^send the (client metadata|body) as application\/json$/;
    await expectError(
      await register("redirect_uris=https%3A%2F%2Fa.example%2Fcb", freshAddress(), "application/x-www-form-urlencoded"),
      415,
      "unsupported_media_type",
      jsonOnly,
    );
    await expectError(
      await register("redirect_uris=https%3A%2F%2Fa.example%2Fcb", freshAddress(), "text/plain"),
      415,
      "unsupported_media_type",
      jsonOnly,
    );
  });
});

describe("native and web applications", () => {
  it("left out, application_type is native when every redirect URI is loopback or a private-use scheme, else web", async () => {
    expect(
      (await registered({ redirect_uris: ["http://localhost:3000/callback"], token_endpoint_auth_method: "none" }))
        .application_type,
    ).toBe("native");
    expect(
      (await registered({ redirect_uris: ["com.example.agent:/cb"], token_endpoint_auth_method: "none" }))
        .application_type,
    ).toBe("native");
    expect((await registered({ redirect_uris: ["https://app.example/cb"] })).application_type).toBe("web");
  });

  it("native allows loopback and private-use schemes, and names the client by the redirect's host when it gave no name", async () => {
    const client = await registered({
      application_type: "native",
      redirect_uris: ["com.example.agent:/cb", "http://[::1]/cb"],
      token_endpoint_auth_method: "none",
    });
    expect(client.client_name).toBe("com.example.agent");
  });

  it("web refuses loopback and private-use redirect URIs; native refuses https off loopback", async () => {
    await expectError(
      await register({ application_type: "web", redirect_uris: ["http://127.0.0.1:5000/cb"] }),
      400,
      "invalid_redirect_uri",
      /native/,
    );
    await expectError(
      await register({
        application_type: "web",
        redirect_uris: ["com.example.agent:/cb"],
        token_endpoint_auth_method: "none",
      }),
      400,
      "invalid_redirect_uri",
      /native/,
    );
    await expectError(
      await register({ application_type: "native", redirect_uris: ["https://app.example/cb"] }),
      400,
      "invalid_redirect_uri",
      /loopback/,
    );
    // Mixed, left out: web, so the loopback one is refused.
    await expectError(
      await register({ redirect_uris: ["https://app.example/cb", "http://localhost/cb"] }),
      400,
      "invalid_redirect_uri",
      /native/,
    );
  });

  it("a private-use scheme is for public clients only", async () => {
    await expectError(
      await register({ redirect_uris: ["com.example.agent:/cb"] }),
      400,
      "invalid_redirect_uri",
      /public clients only/,
    );
  });
});

describe("the limit per address", () => {
  it(`answers 429 with Retry-After past ${LIMIT} registrations an hour from one address; others still register`, async () => {
    const address = freshAddress();
    // Refused registrations count too.
    await expectError(await register({ redirect_uris: ["/bad"] }, address), 400, "invalid_redirect_uri");
    for (let i = 1; i < LIMIT; i++)
      expect((await register({ redirect_uris: ["https://limit.example/cb"] }, address)).status).toBe(201);
    const before = await clientCount();
    const refused = await register({ redirect_uris: ["https://limit.example/cb"] }, address);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(refused.headers.get("cache-control")).toBe("no-store");
    await expectError(refused, 429, "rate_limited", /too many client registrations/);
    expect(await clientCount()).toBe(before);
    expect((await register({ redirect_uris: ["https://limit.example/cb"] })).status).toBe(201);
  });
});
