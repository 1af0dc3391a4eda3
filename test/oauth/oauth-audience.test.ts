// RFC 8707 resource indicators as a client sees them, over real HTTP: the
// authorization request names the resources (PUBLIC_URL, the REST API, and
// PUBLIC_URL/mcp), the token request picks one, the token is for that one
// (introspection's aud) and the other resource refuses it (401
// invalid_token with resource_metadata). Unknown or several resources are
// invalid_target. Without resource everything is as before: the REST API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  authorize,
  codeTokens,
  expectTokenError,
  introspect,
  me,
  startAudienceSuite,
  tokenRequest,
  type AudienceSuite,
} from "../support/audience-suite.js";

let suite: AudienceSuite;

beforeAll(async () => {
  suite = await startAudienceSuite("Audience Cards");
}, 60_000);

afterAll(async () => {
  await suite?.platform.stop();
});

describe("the authorization code flow with resource", () => {
  it("resource=PUBLIC_URL/mcp: a token for the MCP endpoint, refused by the REST API", async () => {
    const answer = await codeTokens(suite, [suite.mcp], [suite.mcp]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const token = answer.body.access_token as string;
    expect(await introspect(suite, token)).toMatchObject({ active: true, aud: suite.mcp, iss: suite.api });

    const res = await me(suite, token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(
      new RegExp(
        `^Bearer realm="bizcard", resource_metadata="${suite.api}/\\.well-known/oauth-protected-resource", error="invalid_token", error_description="[^"]+"$`,
      ),
    );
    expect(await res.json()).toMatchObject({ error: "invalid_token" });
  });

  it("no resource anywhere: a token for the REST API, as before", async () => {
    const answer = await codeTokens(suite, [], []);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const token = answer.body.access_token as string;
    expect(await introspect(suite, token)).toMatchObject({ active: true, aud: suite.api });
    const res = await me(suite, token);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: suite.platform.organisationId, name: "Audience Cards" });
  });

  it("the identifier with a trailing slash names the same resource", async () => {
    const answer = await codeTokens(suite, [`${suite.api}/`], [`${suite.api}/`]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await introspect(suite, answer.body.access_token as string)).toMatchObject({ aud: suite.api });
    const mcp = await codeTokens(suite, [`${suite.mcp}/`], []);
    expect(mcp.status, JSON.stringify(mcp.body)).toBe(200);
    expect(await introspect(suite, mcp.body.access_token as string)).toMatchObject({ aud: suite.mcp });
  });

  it("a code for [mcp] exchanged without resource: the MCP endpoint's token", async () => {
    const answer = await codeTokens(suite, [suite.mcp], []);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await introspect(suite, answer.body.access_token as string)).toMatchObject({ aud: suite.mcp });
  });

  it("a code for both exchanged for either; without resource, the REST API", async () => {
    const both = [suite.api, suite.mcp];
    const mcp = await codeTokens(suite, both, [suite.mcp]);
    expect(await introspect(suite, mcp.body.access_token as string)).toMatchObject({ aud: suite.mcp });
    const api = await codeTokens(suite, both, []);
    expect(await introspect(suite, api.body.access_token as string)).toMatchObject({ aud: suite.api });
    expect((await me(suite, api.body.access_token as string)).status).toBe(200);
  });

  it("the consent page carries each resource through", async () => {
    const { consentFields, callback } = await authorize(suite, [
      ["resource", suite.mcp],
      ["resource", suite.api],
    ]);
    expect(consentFields.filter(([name]) => name === "resource").map(([, v]) => v)).toEqual([suite.api, suite.mcp]);
    expect(callback.searchParams.get("code")).toMatch(/^bcc_/);
  });
});

describe("the consent carries the resources unchanged", () => {
  const json = (body: Record<string, unknown>) => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

  it("a JSON consent names them as an array (in any order), and gets the code", async () => {
    const { callback } = await authorize(
      suite,
      [
        ["resource", suite.api],
        ["resource", suite.mcp],
      ],
      (b, action, fields) => {
        const single = Object.fromEntries(fields.filter(([n]) => n !== "resource"));
        return b.go(action, json({ ...single, resource: [suite.mcp, suite.api], decision: "allow" }));
      },
    );
    expect(callback.searchParams.get("code")).toMatch(/^bcc_/);
  });

  it("a consent that leaves a resource out, or adds one, is refused (400), and the page's own form still gets the code", async () => {
    for (const change of [
      (fields: [string, string][]) => fields.filter(([n, v]) => !(n === "resource" && v === suite.mcp)),
      (fields: [string, string][]) => [...fields, ["resource", suite.api] as [string, string]],
    ]) {
      let answer: Response | undefined;
      await authorize(suite, [["resource", suite.mcp]], async (b, action, fields) => {
        const changed = change(fields);
        answer = await b.go(
          action,
          json({
            ...Object.fromEntries(changed),
            resource: changed.filter(([n]) => n === "resource").map(([, v]) => v),
            decision: "allow",
          }),
        );
        expect(answer.status).toBe(400);
        expect(await answer.json()).toMatchObject({
          error: "invalid_request",
          error_description: expect.stringMatching(/resource/),
        });
        // Then the page's own form, unchanged: the code.
        return b.submit(action, [...fields, ["decision", "allow"]]);
      });
      expect(answer?.status).toBe(400);
    }
  });
});

describe("invalid_target", () => {
  it("an unknown, relative, fragment or garbage resource at /oauth/authorize: the error redirect", async () => {
    for (const resource of ["https://elsewhere.example/mcp", "/mcp", `${suite.mcp}#x`, `${suite.mcp}//`, "not a uri"]) {
      const { callback } = await authorize(suite, [["resource", resource]]);
      expect(callback.searchParams.get("error"), resource).toBe("invalid_target");
      expect(callback.searchParams.get("state")).toBe("aud-state");
      expect(callback.searchParams.get("iss")).toBe(suite.api);
      expect(callback.searchParams.get("code")).toBeNull();
    }
    // One bad among good ones is enough.
    const { callback } = await authorize(suite, [
      ["resource", suite.mcp],
      ["resource", `${suite.api}/other`],
    ]);
    expect(callback.searchParams.get("error")).toBe("invalid_target");
  });

  it("an unknown resource at the token endpoint: 400 invalid_target, and the code stays usable", async () => {
    const { callback, verifier } = await authorize(suite, [["resource", suite.mcp]]);
    const fields: [string, string][] = [
      ["grant_type", "authorization_code"],
      ["code", callback.searchParams.get("code")!],
      ["redirect_uri", "http://127.0.0.1:8765/callback"],
      ["code_verifier", verifier],
    ];
    expectTokenError(
      await tokenRequest(suite, suite.web, [...fields, ["resource", "https://elsewhere.example/mcp"]]),
      "invalid_target",
    );
    const ok = await tokenRequest(suite, suite.web, [...fields, ["resource", suite.mcp]]);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it("two distinct resources at the token endpoint: invalid_target (one resource per token)", async () => {
    const answer = await codeTokens(suite, [suite.api, suite.mcp], [suite.api, suite.mcp]);
    expectTokenError(answer, "invalid_target");
    expect(answer.body.error_description).toMatch(/one resource per token/);
  });

  it("a code for [mcp] exchanged with resource=PUBLIC_URL: invalid_target", async () => {
    expectTokenError(await codeTokens(suite, [suite.mcp], [suite.api]), "invalid_target");
  });

  it("a code for no resource exchanged with resource=PUBLIC_URL/mcp: invalid_target", async () => {
    expectTokenError(await codeTokens(suite, [], [suite.mcp]), "invalid_target");
  });
});

describe("client_credentials with resource", () => {
  const cc = (resources: string[]) =>
    tokenRequest(suite, suite.service, [
      ["grant_type", "client_credentials"],
      ...resources.map((r): [string, string] => ["resource", r]),
    ]);
  const introspectOwn = async (token: string) => {
    const res = await fetch(`${suite.api}/oauth/introspect`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${suite.service.id}:${suite.service.secret}`).toString("base64")}`,
      },
      body: new URLSearchParams({ token }).toString(),
    });
    return (await res.json()) as Record<string, unknown>;
  };

  it("resource=PUBLIC_URL/mcp: a token for the MCP endpoint, refused by the REST API", async () => {
    const answer = await cc([suite.mcp]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const token = answer.body.access_token as string;
    expect(await introspectOwn(token)).toMatchObject({ active: true, aud: suite.mcp });
    expect((await me(suite, token)).status).toBe(401);
  });

  it("no resource, or PUBLIC_URL: the REST API's", async () => {
    for (const resources of [[], [suite.api]]) {
      const answer = await cc(resources);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(await introspectOwn(answer.body.access_token as string)).toMatchObject({ aud: suite.api });
      expect((await me(suite, answer.body.access_token as string)).status).toBe(200);
    }
  });

  it("unknown or two resources: invalid_target", async () => {
    expectTokenError(await cc(["https://elsewhere.example/"]), "invalid_target");
    expectTokenError(await cc([suite.api, suite.mcp]), "invalid_target");
  });
});
