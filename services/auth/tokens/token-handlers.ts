// The token side of AuthService: ExchangeToken (grants/), IntrospectToken,
// RevokeToken, AuthenticateAccessToken, ListGrants, RevokeGrant.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { AuthenticateAccessTokenResponseSchema, type AuthService } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { protectedResources } from "../../shared/protected-resources.js";
import { tokenHash } from "../../shared/token-hash.js";
import { invalid, notFound, requireUuid } from "../../shared/validation.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import type { AuthServiceDeps } from "../auth-service-deps.js";
import { enqueueTokenRevoked } from "../grants/grant-events.js";
import { accessTokenIssuer } from "../grants/issue-tokens.js";
import { TOKEN_PREFIX } from "../grants/token-values.js";
import { InvalidToken, oauthHandler } from "../oauth-errors.js";
import { createClientAuthentication } from "./client-authentication.js";
import { type ActiveToken, createIntrospection } from "./introspection.js";
import { createTokenEndpoint } from "./token-endpoint.js";

export function createTokenHandlers(deps: AuthServiceDeps): Partial<ServiceImpl<typeof AuthService>> {
  const { orm, config, issuer, limits } = deps;
  const schema = AUTH_SCHEMA;
  const t = (table: string) => `"${schema}"."${table}"`;
  const tables = {
    schema,
    accessTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    refreshTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
  };
  const resources = protectedResources(issuer);
  // Named statements, not on the embedded start's PGlite (unset DATABASE_URL; client-authentication.ts).
  const preparedStatements = Boolean(config.DATABASE_URL);
  const metadataDocuments = config.OAUTH_CLIENT_METADATA_DOCUMENTS;
  const authenticateClient = createClientAuthentication({ orm, schema, limits, metadataDocuments, preparedStatements });
  const exchange = createTokenEndpoint({
    orm,
    tables,
    grants: deps.grants,
    refreshRetryWindowSeconds: config.REFRESH_RETRY_WINDOW_SECONDS,
    resources,
    issueAccessToken: accessTokenIssuer(orm, tables, preparedStatements),
    authenticateClient,
  });
  const introspect = createIntrospection({ orm, schema, issuer, resources, authenticateClient, preparedStatements });
  const events = { schema, subjectPrefix: config.NATS_SUBJECT_PREFIX };

  return {
    exchangeToken: oauthHandler(async (req) => exchange(req)),

    introspectToken: oauthHandler(async (req) => introspect(req)),

    // RFC 7009 §2.1: "The client also includes its authentication credentials"
    // and "The authorization server first validates the client credentials [...]
    // and then verifies whether the token was issued to the client making the
    // revocation request." §2.2: "invalid tokens do not cause an error response".
    revokeToken: oauthHandler(async (req) => {
      const client = await authenticateClient(req.client, req.remoteAddress);
      const hash = tokenHash(req.token);
      const revoked = await orm.em.fork().transactional(async (em) => {
        let pair: { organisation_id: string } | undefined;
        let accessHashes = [hash];
        if (req.token.startsWith(TOKEN_PREFIX.access)) {
          [pair] = await em.execute(
            `delete from ${t("access_token")} where "hash" = ? and "client_id" = ? returning "organisation_id"`,
            [hash, client.id],
          );
        } else if (req.token.startsWith(TOKEN_PREFIX.refresh)) {
          // RFC 7009 §2.1: "If the token passed to the request is a refresh
          // token [...] the authorization server SHOULD also invalidate all
          // access tokens based on the same authorization grant": its family.
          // The grant's row lock first, in UPDATE mode (grants/grant-lock.ts):
          // a rotation in flight commits first, and the deletes below see what it issued.
          const [family]: { family: string; organisation_id: string }[] = await em.execute(
            `select r."family", g."organisation_id" from ${t("refresh_token")} r join ${t("grant")} g on g."id" = r."grant_id"
              where r."hash" = ? and g."client_id" = ? for update of g`,
            [hash, client.id],
          );
          pair = family;
          if (family) {
            await em.execute(`delete from ${t("refresh_token")} where "family" = ?`, [family.family]);
            const rows: { hash: string }[] = await em.execute(
              `delete from ${t("access_token")} where "family" = ? returning "hash"`,
              [family.family],
            );
            accessHashes = rows.map((r) => r.hash);
          }
        }
        if (!pair) return false;
        const revokedPair = { organisationId: pair.organisation_id, clientId: client.id };
        await enqueueTokenRevoked(em, events, revokedPair, accessHashes);
        return true;
      });
      if (revoked) deps.onEventCommitted?.();
      return {};
    }),

    // One indexed statement, no unit of work: the gateway's bearer check.
    authenticateAccessToken: oauthHandler(async (req) => {
      const [row]: (Omit<ActiveToken, "created_at" | "token_type"> & { member_id: string | null })[] = req.accessToken
        ? await orm.em.getConnection().execute(
            `select "client_id", "organisation_id", "member_id", "scopes", "audience", "expires_at" from ${t("access_token")}
                  where "hash" = ? and "expires_at" > now()`,
            [tokenHash(req.accessToken)],
          )
        : [];
      if (!row) throw new InvalidToken("the access token is unknown, expired or revoked");
      return create(AuthenticateAccessTokenResponseSchema, {
        organisationId: row.organisation_id,
        clientId: row.client_id,
        scopes: row.scopes,
        memberId: row.member_id ?? "",
        expireTime: timestampFromDate(new Date(row.expires_at)),
        audience: resources[row.audience].identifier,
      });
    }),

    async listGrants(req) {
      return { grants: await deps.grants.listGrants(requireUuid("organisation_id", req.organisationId)) };
    },

    async revokeGrant(req) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      if (!req.clientId) throw invalid("client_id", "required");
      if (!(await deps.grants.revokeGrant(organisationId, req.clientId, "withdrawn"))) throw notFound("grant");
      return {};
    },
  };
}
