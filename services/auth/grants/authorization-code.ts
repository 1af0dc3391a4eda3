// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5-4.6).
import { createHash, randomUUID } from "node:crypto";
import { tokenHash } from "../../shared/token-hash.js";
import { InvalidGrant } from "../oauth-errors.js";
import { issueTokens, tokenAnswer } from "./issue-tokens.js";
import type { GrantModule } from "./grant-module.js";
import { lockGrantForIssue } from "./grant-lock.js";
import type { ResourceName } from "../../shared/protected-resources.js";
import { audienceWithin, tokenResource } from "../resource-indicators.js";

/** RFC 7636 §4.1: code-verifier = 43*128unreserved; unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~". */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

interface CodeRow {
  grant_id: string;
  client_id: string;
  organisation_id: string;
  member_id: string;
  redirect_uri: string;
  redirect_uri_omitted: boolean;
  scopes: string[];
  resources: ResourceName[];
  code_challenge: string;
  used: boolean;
  expired: boolean;
}

const UNKNOWN = "the authorization code is unknown, expired or revoked";

export const authorizationCodeGrant: GrantModule = {
  grantType: "authorization_code",
  required: [{ name: "code", field: "code" }],
  async handle({ deps, client, request }) {
    const { schema } = deps.tables;
    const hash = tokenHash(request.code);
    const [code]: CodeRow[] = await deps.orm.em.fork().execute(
      `select "grant_id", "client_id", "organisation_id", "member_id", "redirect_uri", "redirect_uri_omitted", "scopes", "resources", "code_challenge",
              "used_at" is not null as "used", "expires_at" <= now() as "expired"
         from "${schema}"."authorization_code" where "hash" = ?`,
      [hash],
    );
    if (!code) throw new InvalidGrant(UNKNOWN);
    // RFC 6749 §4.1.3: "ensure that the authorization code was issued to the
    // authenticated confidential client, or if the client is public, ensure
    // that the code was issued to "client_id" in the request".
    if (code.client_id !== client.id) throw new InvalidGrant("the authorization code was issued to another client");
    if (code.expired) throw new InvalidGrant("the authorization code has expired");
    // RFC 6749 §4.1.3: "if included ensure that their values are identical."
    // A request that named none went to the client's only registered one: the
    // token request may still send that one (as strict libraries do), never another.
    if (request.redirectUri === "" ? !code.redirect_uri_omitted : request.redirectUri !== code.redirect_uri) {
      throw new InvalidGrant("redirect_uri does not match the one of the authorization request");
    }
    checkPkce(code.code_challenge, request.codeVerifier, client.public);
    // RFC 6749 §4.1.2: "If an authorization code is used more than once, the
    // authorization server MUST deny the request and SHOULD revoke (when
    // possible) all tokens previously issued based on that authorization code."
    if (code.used) return replayed(code);
    // RFC 8707 §2.2, before the code is used: a resource the authorization request named.
    const audience = audienceWithin(deps.resources, code.resources, tokenResource(deps.resources, request.resource));
    const family = randomUUID();
    const issued = await deps.orm.em.fork().transactional(async (em) => {
      // The grant first (grant-lock.ts): a revocation in flight ends first, or waits for this commit.
      if (!(await lockGrantForIssue(em, schema, code.grant_id))) return "revoked" as const;
      // The single use, atomically: of two concurrent exchanges one wins.
      const won: unknown[] = await em.execute(
        `update "${schema}"."authorization_code" set "used_at" = now(), "family" = ? where "hash" = ? and "used_at" is null returning "hash"`,
        [family, hash],
      );
      if (won.length === 0) return undefined;
      return issueTokens(em, deps.tables, {
        clientId: client.id,
        organisationId: code.organisation_id,
        memberId: code.member_id,
        grantId: code.grant_id,
        family,
        scopes: code.scopes,
        audience,
        refresh: client.grantTypes.includes("refresh_token")
          ? { scopes: code.scopes, resources: code.resources }
          : undefined,
      });
    });
    if (issued === "revoked") throw new InvalidGrant(UNKNOWN);
    if (!issued) return replayed(code);
    return tokenAnswer(issued);

    async function replayed(row: CodeRow): Promise<never> {
      await deps.grants.revokeGrant(row.organisation_id, row.client_id, "authorization_code_replay");
      throw new InvalidGrant("the authorization code was already used; the tokens issued with it are revoked");
    }
  },
};

/**
 * RFC 7636 §4.6: "the server verifies it by calculating the code challenge
 * from the received "code_verifier" and comparing it with the previously
 * associated "code_challenge"". A verifier without a challenge is refused
 * (RFC 9700 §2.1.1, PKCE downgrade); public clients must use PKCE.
 */
function checkPkce(challenge: string, verifier: string, publicClient: boolean): void {
  if (!challenge) {
    if (verifier) throw new InvalidGrant("code_verifier was sent, but the authorization request had no code_challenge");
    if (publicClient) throw new InvalidGrant("a public client must use PKCE (code_challenge with S256)");
    return;
  }
  if (!verifier) throw new InvalidGrant("code_verifier is required: the authorization request had a code_challenge");
  if (!VERIFIER.test(verifier))
    throw new InvalidGrant("code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~");
  const computed = createHash("sha256").update(verifier, "ascii").digest("base64url");
  if (computed !== challenge) throw new InvalidGrant("code_verifier does not match the code_challenge");
}
