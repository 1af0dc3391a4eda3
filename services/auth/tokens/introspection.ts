// RFC 7662 introspection: the client authenticates, then the stored token a
// value names is looked up while it is active, and the answer made of it.
import { create } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import { escapeIdentifier } from "pg";
import {
  IntrospectTokenResponseSchema,
  type IntrospectTokenRequest,
  type IntrospectTokenResponse,
} from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ProtectedResources, ResourceName } from "../../shared/protected-resources.js";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { tokenHash } from "../../shared/token-hash.js";
import { TOKEN_PREFIX } from "../grants/token-values.js";
import { InvalidClient } from "../oauth-errors.js";
import type { AuthenticateClient } from "./client-authentication.js";

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
function activeTokenSql(schema: string, hash: string, kind: string): string {
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
export function introspectionAnswer(
  row: ActiveToken | undefined,
  clientId: string,
  issuer: string,
  resources: ProtectedResources,
): IntrospectTokenResponse {
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

export interface IntrospectionDeps {
  orm: MikroORM;
  schema: string;
  issuer: string;
  resources: ProtectedResources;
  authenticateClient: AuthenticateClient;
  /** Name the statement (client-authentication.ts says when). */
  preparedStatements?: boolean;
}

/** Looks up each token value's active row (undefined: none), a batch to a statement. */
function tokenLookup(deps: IntrospectionDeps): (token: string) => Promise<ActiveToken | undefined> {
  const knex = deps.orm.em.getKnex();
  // "q": the lookup's own aliases (a, r, g) are inside the lateral subquery.
  const text = `select q."n", t.* from unnest(?::text[], ?::text[]) with ordinality as q("hash", "kind", "n"),
    lateral (${activeTokenSql(deps.schema, 'q."hash"', 'q."kind"')}) t`;
  const name = deps.preparedStatements ? { name: "introspection-lookup" } : {};
  const write = async (queued: Queued<string, ActiveToken | undefined>[]) => {
    const values = [queued.map((q) => tokenHash(q.item)), queued.map((q) => tokenKind(q.item))];
    const { rows } = await knex.raw<{ rows: (ActiveToken & { n: string })[] }>(text, values).options(name);
    const found = new Map(rows.map((r) => [Number(r.n), r]));
    queued.forEach((q, i) => q.resolve(found.get(i + 1)));
  };
  return statementBatcher<string, ActiveToken | undefined>({ write });
}

/**
 * RFC 7662 §2.1: "the endpoint MUST also require some form of authorization
 * to access this endpoint"; here: confidential clients, which see only their
 * own tokens as active (§4: "the authorization server MAY respond with an
 * active:false" to a client not allowed to know).
 */
export function createIntrospection(
  deps: IntrospectionDeps,
): (request: IntrospectTokenRequest) => Promise<IntrospectTokenResponse> {
  const lookUp = tokenLookup(deps);
  return async (request) => {
    const client = await deps.authenticateClient(request.client, request.remoteAddress);
    if (client.public) throw new InvalidClient("introspection is for confidential clients");
    return introspectionAnswer(await lookUp(request.token), client.id, deps.issuer, deps.resources);
  };
}
