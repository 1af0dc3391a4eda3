// grant_type=refresh_token (RFC 6749 §6), rotating (RFC 9700 §4.14.2):
// every use returns a new refresh token; an already-rotated one presented
// again is reuse and revokes the grant, except within the contract's retry
// window, where the same client gets the same new pair back.
import { tokenHash } from "../../shared/token-hash.js";
import { InvalidGrant } from "../oauth-errors.js";
import { issueTokens, tokenAnswer } from "./issue-tokens.js";
import { openAnswer, sealAnswer } from "./retry-answer.js";
import { narrowScope } from "./scope-parameter.js";
import type { GrantModule } from "./grant-module.js";
import { lockGrantOfRefreshToken } from "./grant-lock.js";
import type { ResourceName } from "../../shared/protected-resources.js";
import { audienceWithin, tokenResource } from "../resource-indicators.js";

interface RefreshRow {
  grant_id: string;
  family: string;
  member_id: string;
  scopes: string[];
  audience: ResourceName;
  resources: ResourceName[];
  organisation_id: string;
  client_id: string;
}

const UNKNOWN = "the refresh token is unknown, expired or revoked";

export const refreshTokenGrant: GrantModule = {
  grantType: "refresh_token",
  required: [{ name: "refresh_token", field: "refreshToken" }],
  async handle({ deps, client, request }) {
    const { schema } = deps.tables;
    const presented = request.refreshToken;
    const hash = tokenHash(presented);
    // RFC 8707 §2.2 (checked before anything changes): at most one known resource.
    const requested = tokenResource(deps.resources, request.resource);
    const issued = await deps.orm.em.fork().transactional(async (em) => {
      // The grant first (grant-lock.ts): a revocation in flight ends first, or waits for this commit.
      if (!(await lockGrantOfRefreshToken(em, schema, hash))) return undefined;
      // Rotation, atomically: a concurrent refresh with the same token waits, then finds it rotated.
      // RFC 6749 §6: "validate the refresh token" and "ensure that the refresh
      // token was issued to the authenticated client".
      const [row]: RefreshRow[] = await em.execute(
        `update "${schema}"."refresh_token" r set "rotated_at" = now()
           from "${schema}"."grant" g
          where r."hash" = ? and r."rotated_at" is null and r."expires_at" > now()
            and g."id" = r."grant_id" and g."client_id" = ?
          returning r."grant_id", r."family", r."member_id", r."scopes", r."audience", r."resources", g."organisation_id", g."client_id"`,
        [hash, client.id],
      );
      if (!row) return undefined;
      // RFC 6749 §6: "The requested scope MUST NOT include any scope not
      // originally granted by the resource owner" (a failure rolls the rotation back).
      const scopes = narrowScope(request.scope, row.scopes);
      // The audience of the token refreshed, or another resource the
      // authorization request named (RFC 8707 §2.2: else invalid_target).
      const audience =
        requested === undefined ? row.audience : audienceWithin(deps.resources, row.resources, requested);
      const next = await issueTokens(em, deps.tables, {
        clientId: client.id,
        organisationId: row.organisation_id,
        memberId: row.member_id,
        grantId: row.grant_id,
        family: row.family,
        scopes,
        audience,
        refresh: { scopes: row.scopes, resources: row.resources },
      });
      await em.execute(`update "${schema}"."refresh_token" set "retry_answer" = ? where "hash" = ?`, [
        sealAnswer(presented, next),
        hash,
      ]);
      return next;
    });
    if (issued) return tokenAnswer(issued);

    // Not rotated now: unknown, expired, another client's, or rotated before.
    const [old]: (RefreshRow & { rotated: boolean; in_window: boolean; retry_answer: Buffer | null })[] =
      await deps.orm.em.fork().execute(
        `select r."grant_id", r."family", r."member_id", r."scopes", r."audience", r."resources", g."organisation_id", g."client_id",
              r."rotated_at" is not null as "rotated",
              r."rotated_at" > now() - make_interval(secs => ?) as "in_window",
              r."retry_answer"
         from "${schema}"."refresh_token" r join "${schema}"."grant" g on g."id" = r."grant_id"
        where r."hash" = ?`,
        [deps.refreshRetryWindowSeconds, hash],
      );
    if (!old || old.client_id !== client.id || !old.rotated) throw new InvalidGrant(UNKNOWN);
    if (old.in_window && old.retry_answer) {
      // CONTRACT: "the same refresh token presented again within a short
      // window (default 30 s) by the same client returns the same new pair";
      // only while that pair is unused: a client that lost the answer cannot have rotated it.
      const answer = openAnswer(presented, old.retry_answer);
      if (answer && (await successorUnused(answer.refreshToken))) return tokenAnswer(answer);
    }
    // RFC 9700 §4.14.2: "If a refresh token is compromised and subsequently
    // used by both the attacker and the legitimate client, one of them will
    // present an invalidated refresh token, which will inform the
    // authorization server of the breach. The authorization server cannot
    // determine which party submitted the invalid refresh token, but it will
    // revoke the active refresh token. This stops the attack".
    await deps.grants.revokeGrant(old.organisation_id, old.client_id, "refresh_token_reuse");
    throw new InvalidGrant("the refresh token was already used; the grant is revoked");

    async function successorUnused(refreshToken: string): Promise<boolean> {
      const rows: unknown[] = await deps.orm.em
        .fork()
        .execute(
          `select 1 from "${schema}"."refresh_token" where "hash" = ? and "rotated_at" is null and "expires_at" > now()`,
          [tokenHash(refreshToken)],
        );
      return rows.length === 1;
    }
  },
};
