// The Client ID Metadata Document rules alone, without fetch or database:
// which client_id URLs are accepted, how long a document is kept (its
// Cache-Control within bounds), and what a document must and must not say.
// Through the gateway: oauth-client-metadata*.test.ts.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_CACHE_SECONDS,
  MAX_CACHE_SECONDS,
  MIN_CACHE_SECONDS,
  cacheSeconds,
} from "../../services/auth/clients/metadata-document/cache-lifetime.js";
import { checkDocumentUrl, isDocumentClientId } from "../../services/auth/clients/metadata-document/client-id-url.js";
import { parseDocument } from "../../services/auth/clients/metadata-document/parse-document.js";
import { ALL_SCOPES } from "../../services/auth/scopes.js";

const URL_ = "https://agent.example/oauth/client.json";

describe("client_id URLs", () => {
  it("a URL client_id names a document; a registered id does not", () => {
    expect(isDocumentClientId(URL_)).toBe(true);
    expect(isDocumentClientId("bc_abc")).toBe(false);
  });

  it("https with a path, in normal form; http only on loopback and only in development", () => {
    expect(checkDocumentUrl(URL_, false).href).toBe(URL_);
    expect(checkDocumentUrl("https://agent.example:8443/c", false).port).toBe("8443");
    expect(() => checkDocumentUrl("http://127.0.0.1:3000/c.json", false)).toThrow(/must use https/);
    expect(checkDocumentUrl("http://127.0.0.1:3000/c.json", true).hostname).toBe("127.0.0.1");
    expect(checkDocumentUrl("http://localhost:3000/c.json", true).hostname).toBe("localhost");
    expect(() => checkDocumentUrl("http://agent.example/c.json", true)).toThrow(/must use https/);
    for (const [url, why] of [
      ["https://agent.example", /must have a path/],
      ["https://agent.example/", /must have a path/],
      ["https://agent.example/c.json?x=1", /must not contain a query/],
      ["https://agent.example/c.json#f", /must not contain a fragment/],
      ["https://agent.example/a/./c.json", /\. or \.\. path segments/],
      ["https://agent.example/a/%2E%2E/c.json", /\. or \.\. path segments/],
      ["https://u:p@agent.example/c.json", /user name or password/],
      ["https://AGENT.example/c.json", /not in its normal form \(https:\/\/agent\.example\/c\.json\)/],
      ["https://agent.example:443/c.json", /not in its normal form/],
      ["https://agent.example/c json", /spaces or control characters/],
      [`https://agent.example/${"a".repeat(2100)}`, /longer than 2048/],
    ] as const) {
      expect(() => checkDocumentUrl(url, false), url).toThrow(why);
    }
  });
});

describe("how long a document is kept", () => {
  it("max-age within [5 min, 24 h]; no-store and no-cache at the floor; none: an hour", () => {
    expect([MIN_CACHE_SECONDS, MAX_CACHE_SECONDS, DEFAULT_CACHE_SECONDS]).toEqual([300, 86_400, 3600]);
    expect(cacheSeconds(undefined)).toBe(3600);
    expect(cacheSeconds("public")).toBe(3600);
    expect(cacheSeconds("max-age=600")).toBe(600);
    expect(cacheSeconds("public, Max-Age=7200")).toBe(7200);
    expect(cacheSeconds("max-age=0")).toBe(300);
    expect(cacheSeconds("max-age=31536000, immutable")).toBe(86_400);
    expect(cacheSeconds("no-store")).toBe(300);
    expect(cacheSeconds("max-age=9000, no-cache")).toBe(300);
  });
});

describe("what a document says", () => {
  const parse = (doc: Record<string, unknown>, allowInsecure = false) =>
    parseDocument(URL_, JSON.stringify(doc), { allowInsecure });
  const base = { client_id: URL_, redirect_uris: ["https://agent.example/cb"] };

  it("the defaults: the host as name, every scope, authorization_code and refresh_token, web", () => {
    expect(parse(base)).toEqual({
      name: "agent.example",
      redirectUris: ["https://agent.example/cb"],
      scopes: ALL_SCOPES,
      grantTypes: ["authorization_code", "refresh_token"],
      clientUri: null,
      applicationType: "web",
    });
  });

  it("scope limits the scopes (unknown ones left out); native apps' loopback and private-use redirect URIs", () => {
    const parsed = parse({
      ...base,
      client_name: " Agent ",
      scope: "organisation:read openid",
      redirect_uris: ["http://127.0.0.1/cb", "com.example.agent:/cb"],
      application_type: "native",
      grant_types: ["authorization_code"],
    });
    expect(parsed).toMatchObject({
      name: "Agent",
      scopes: ["organisation:read"],
      grantTypes: ["authorization_code"],
      applicationType: "native",
    });
    expect(() => parse({ ...base, scope: "openid profile" })).toThrow(/names none of this server's scopes/);
  });

  it("refusals, each naming what is wrong", () => {
    for (const [doc, why] of [
      [{ ...base, client_id: `${URL_}x` }, /its client_id differs from its URL/],
      [{ redirect_uris: base.redirect_uris }, /its client_id differs from its URL \(client_id: missing\)/],
      [{ ...base, token_endpoint_auth_method: "private_key_jwt" }, /only none is accepted/],
      [{ ...base, client_secret_expires_at: 0 }, /must not carry a client_secret/],
      [{ ...base, redirect_uris: [] }, /non-empty list/],
      [{ ...base, redirect_uris: "https://agent.example/cb" }, /non-empty list/],
      [{ ...base, redirect_uris: ["http://agent.example/cb"] }, /must use https/],
      [{ ...base, redirect_uris: Array.from({ length: 11 }, (_, i) => `https://agent.example/${i}`) }, /more than 10/],
      [{ ...base, grant_types: ["refresh_token"] }, /refresh_token needs authorization_code/],
      [{ ...base, grant_types: ["urn:ietf:params:oauth:grant-type:device_code"] }, /unknown grant type/],
      [{ ...base, response_types: ["token"] }, /response_types must include "code"/],
      [{ ...base, client_name: "" }, /client_name must be 1 to 100/],
      [{ ...base, client_uri: "javascript:alert(1)" }, /client_uri must be an http or https URL/],
      [{ ...base, application_type: "desktop" }, /application_type must be "web" or "native"/],
    ] as const) {
      expect(() => parse(doc as Record<string, unknown>), JSON.stringify(doc).slice(0, 80)).toThrow(why);
    }
    expect(() => parseDocument(URL_, "not json", { allowInsecure: false })).toThrow(/is not valid JSON/);
    expect(() => parseDocument(URL_, "null", { allowInsecure: false })).toThrow(/is not a JSON object/);
  });

  it("JSON as strict as a request body's: no member twice at any depth, no U+0000 or unpaired surrogate in any name or string", () => {
    const text = (members: string) =>
      `{"client_id":${JSON.stringify(URL_)},"redirect_uris":["https://agent.example/cb"],${members}}`;
    const parseText = (members: string) => () => parseDocument(URL_, text(members), { allowInsecure: false });
    expect(parseText('"client_name":"a"')().name).toBe("a");
    for (const [members, why] of [
      ['"client_name":"a","client_name":"b"', /cannot be used: it has the member "client_name" more than once/],
      ['"client_name":"a","client\\u005fname":"b"', /it has the member "client_name" more than once/],
      ['"jwks":{"keys":[{"kid":"1","kid":"2"}]}', /it has the member "kid" more than once/],
      [
        '"client_name":"\\ud800"',
        /its member "client_name" must not contain an unpaired surrogate, which is not Unicode text/,
      ],
      ['"contacts":["x","\\udfff"]', /its member "contacts" must not contain an unpaired surrogate/],
      ['"contacts":{"\\ud800":1}', /its member "contacts" must not contain an unpaired surrogate/],
      ['"\\udc00":1', /a member name must not contain an unpaired surrogate/],
      ['"logo_uri":"a\\u0000"', /its member "logo_uri" must not contain control characters \(U\+0000\)/],
    ] as const) {
      expect(parseText(members), members).toThrow(why);
    }
    // A surrogate pair is a character, not a lone surrogate.
    expect(parseText('"client_name":"card \\ud83d\\udcc7"')().name).toBe("card \u{1f4c7}");
  });
});
