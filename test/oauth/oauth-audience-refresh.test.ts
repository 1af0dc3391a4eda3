// RFC 8707 resource indicators on refresh: a refresh without resource keeps
// the audience of the token refreshed (through every rotation); with one, it
// may switch to another resource the authorization request named, never to
// one it did not name (invalid_target, and the refresh token stays usable).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
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
  suite = await startAudienceSuite("Refreshing Cards");
}, 60_000);

afterAll(async () => {
  await suite?.platform.stop();
});

const refresh = (refreshToken: string, resources: string[] = []) =>
  tokenRequest(suite, suite.web, [
    ["grant_type", "refresh_token"],
    ["refresh_token", refreshToken],
    ...resources.map((r): [string, string] => ["resource", r]),
  ]);

async function expectAudience(
  answer: Awaited<ReturnType<typeof refresh>>,
  audience: string,
): Promise<{ access: string; refresh: string }> {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const access = answer.body.access_token as string;
  expect(await introspect(suite, access)).toMatchObject({ active: true, aud: audience });
  return { access, refresh: answer.body.refresh_token as string };
}

describe("refresh and the audience", () => {
  it("without resource, every rotation keeps the MCP audience", async () => {
    let tokens = await expectAudience(await codeTokens(suite, [suite.mcp], [suite.mcp]), suite.mcp);
    for (let i = 0; i < 2; i++) tokens = await expectAudience(await refresh(tokens.refresh), suite.mcp);
    expect((await me(suite, tokens.access)).status).toBe(401);
    // The refresh token's own introspection names the family's current audience.
    expect(await introspect(suite, tokens.refresh)).toMatchObject({ active: true, aud: suite.mcp });
  });

  it("without resource anywhere: the REST API, as before", async () => {
    const tokens = await expectAudience(await codeTokens(suite, [], []), suite.api);
    const next = await expectAudience(await refresh(tokens.refresh), suite.api);
    expect((await me(suite, next.access)).status).toBe(200);
  });

  it("a family of [api, mcp] switches with resource, and keeps the switch", async () => {
    const first = await expectAudience(await codeTokens(suite, [suite.api, suite.mcp], [suite.api]), suite.api);
    const toMcp = await expectAudience(await refresh(first.refresh, [suite.mcp]), suite.mcp);
    const kept = await expectAudience(await refresh(toMcp.refresh), suite.mcp);
    const back = await expectAudience(await refresh(kept.refresh, [`${suite.api}/`]), suite.api);
    expect((await me(suite, back.access)).status).toBe(200);
  });

  it("a family of [mcp] narrows to mcp with resource=mcp", async () => {
    const tokens = await expectAudience(await codeTokens(suite, [suite.mcp], []), suite.mcp);
    await expectAudience(await refresh(tokens.refresh, [suite.mcp]), suite.mcp);
  });

  it("a resource outside the family's list: invalid_target, and the refresh token still works", async () => {
    const mcpOnly = await expectAudience(await codeTokens(suite, [suite.mcp], [suite.mcp]), suite.mcp);
    expectTokenError(await refresh(mcpOnly.refresh, [suite.api]), "invalid_target");
    await expectAudience(await refresh(mcpOnly.refresh), suite.mcp);

    const apiOnly = await expectAudience(await codeTokens(suite, [], []), suite.api);
    expectTokenError(await refresh(apiOnly.refresh, [suite.mcp]), "invalid_target");
    expectTokenError(await refresh(apiOnly.refresh, ["https://elsewhere.example/"]), "invalid_target");
    expectTokenError(await refresh(apiOnly.refresh, [suite.api, suite.mcp]), "invalid_target");
    await expectAudience(await refresh(apiOnly.refresh, [suite.api]), suite.api);
  });
});
