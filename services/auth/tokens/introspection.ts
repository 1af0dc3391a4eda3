// RFC 7662 introspection's two halves that both of its paths share (the
// pipeline in token-handlers.ts, the one-statement fast path in
// introspection-fast-path.ts): which stored token a value names while it is
// active, and the answer made of it.
import { create } from "@bufbuild/protobuf";
import { IntrospectTokenResponseSchema, type IntrospectTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ProtectedResources, ResourceName } from "../../shared/protected-resources.js";
import { escapeIdentifier } from "pg";
import { TOKEN_PREFIX } from "../grants/token-values.js";

/** What a token value is by its prefix: an access or a refresh token, or neither (never active). */
export type TokenKind = "access" | "refresh" | "";

export const tokenKind = (token: string): TokenKind =>
  token.startsWith(TOKEN_PREFIX.access) ? "access" : token.startsWith(TOKEN_PREFIX.refresh) ? "refresh" : "";

/** An active token's row, as activeTokenSql() selects it. */
export interface ActiveToken {
  client_id: string;
  organisation_id: string;
  scopes: string[];
  audience: ResourceName;
  created_at: Date;
  expires_at: Date;
  /** "Bearer" for an access token, "" for a refresh token. */
  token_type: string;
}

/**
 * A statement (to use as a lateral subquery) selecting the active token whose
 * hash is the SQL expression `hash`, of the kind `kind` (a TokenKind): an
 * access token not expired; a refresh token not expired and not rotated (its
 * successor is the family's live one), with its grant's client and
 * organisation. No row: not active.
 */
export function activeTokenSql(schema: string, hash: string, kind: string): string {
  const t = (table: string) => `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;
  return `select a."client_id", a."organisation_id", a."scopes", a."audience", a."created_at", a."expires_at", 'Bearer' as "token_type"
            from ${t("access_token")} a
           where ${kind} = 'access' and a."hash" = ${hash} and a."expires_at" > now()
          union all
          select g."client_id", g."organisation_id", r."scopes", r."audience", r."created_at", r."expires_at", '' as "token_type"
            from ${t("refresh_token")} r join ${t("grant")} g on g."id" = r."grant_id"
           where ${kind} = 'refresh' and r."hash" = ${hash} and r."rotated_at" is null and r."expires_at" > now()`;
}

/**
 * The answer to `clientId`'s introspection of a token whose active row is
 * `row` (undefined: none). RFC 7662 §2.2: "If the introspection call is
 * properly authorized but the token is not active, does not exist on this
 * server, or the protected resource is not allowed to introspect this
 * particular token, then the authorization server MUST return an
 * introspection response with the "active" field set to "false"": a client
 * sees only its own tokens as active.
 */
export function introspectionAnswer(row: ActiveToken | undefined, clientId: string, issuer: string, resources: ProtectedResources): IntrospectTokenResponse {
  if (!row || row.client_id !== clientId) return create(IntrospectTokenResponseSchema, { active: false });
  const seconds = (d: Date) => BigInt(Math.floor(new Date(d).getTime() / 1000));
  return create(IntrospectTokenResponseSchema, {
    active: true,
    scope: row.scopes.join(" "),
    clientId: row.client_id,
    tokenType: row.token_type,
    exp: seconds(row.expires_at),
    iat: seconds(row.created_at),
    sub: row.organisation_id,
    iss: issuer,
    // RFC 7662 §2.2 aud: "Service-specific string identifier or list of
    // string identifiers representing the intended audience for this
    // token": the resource identifier it was issued for (RFC 8707).
    aud: resources[row.audience].identifier,
  });
}
