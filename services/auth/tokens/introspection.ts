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

export interface IntrospectionDeps {
  orm: MikroORM;
  schema: string;
  issuer: string;
  resources: ProtectedResources;
  authenticateClient: AuthenticateClient;
  /** Name the statement (client-authentication.ts says when). */
  preparedStatements?: boolean;
}

/** The kind of a token value by its prefix: an access or a refresh token, or neither (never active). */
const tokenKind = (token: string) =>
  token.startsWith(TOKEN_PREFIX.access) ? "access" : token.startsWith(TOKEN_PREFIX.refresh) ? "refresh" : "";

/**
 * Looks up each token value's active row (undefined: none), a batch to a
 * statement: an access token not expired; a refresh token not expired and
 * not rotated, with its grant's client and organisation.
 */
function tokenLookup(deps: IntrospectionDeps): (token: string) => Promise<ActiveToken | undefined> {
  const knex = deps.orm.em.getKnex();
  const t = (table: string) => `${escapeIdentifier(deps.schema)}.${escapeIdentifier(table)}`;
  // "q": the lookup's own aliases (a, r, g) are inside the lateral subquery.
  const text = `select q."n", t.* from unnest(?::text[], ?::text[]) with ordinality as q("hash", "kind", "n"),
    lateral (select a."client_id", a."organisation_id", a."scopes", a."audience", a."created_at", a."expires_at", 'Bearer' as "token_type"
            from ${t("access_token")} a
           where q."kind" = 'access' and a."hash" = q."hash" and a."expires_at" > now()
          union all
          select g."client_id", g."organisation_id", r."scopes", r."audience", r."created_at", r."expires_at", '' as "token_type"
            from ${t("refresh_token")} r join ${t("grant")} g on g."id" = r."grant_id"
           where q."kind" = 'refresh' and r."hash" = q."hash" and r."rotated_at" is null and r."expires_at" > now()) t`;
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
 * to access this endpoint"; here: confidential clients.
 */
export function createIntrospection(
  deps: IntrospectionDeps,
): (request: IntrospectTokenRequest) => Promise<IntrospectTokenResponse> {
  const lookUp = tokenLookup(deps);
  const seconds = (d: Date) => BigInt(Math.floor(new Date(d).getTime() / 1000));
  return async (request) => {
    const client = await deps.authenticateClient(request.client, request.remoteAddress);
    if (client.public) throw new InvalidClient("introspection is for confidential clients");
    const row = await lookUp(request.token);
    // RFC 7662 §2.2: "If the introspection call is properly authorized but the
    // token is not active, does not exist on this server, or the protected
    // resource is not allowed to introspect this particular token, then the
    // authorization server MUST return an introspection response with the
    // "active" field set to "false"": a client sees only its own tokens as active.
    if (!row || row.client_id !== client.id) return create(IntrospectTokenResponseSchema, { active: false });
    return create(IntrospectTokenResponseSchema, {
      active: true,
      scope: row.scopes.join(" "),
      clientId: row.client_id,
      tokenType: row.token_type,
      exp: seconds(row.expires_at),
      iat: seconds(row.created_at),
      sub: row.organisation_id,
      iss: deps.issuer,
      // RFC 7662 §2.2 aud: "Service-specific string identifier or list of
      // string identifiers representing the intended audience for this token".
      aud: deps.resources[row.audience].identifier,
    });
  };
}
