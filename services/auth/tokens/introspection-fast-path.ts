// Introspection's fast path (RFC 7662) for its common case: a confidential
// client that authenticates right, answered with ONE SQL statement.
//
// Why it exists: the pipeline (token-handlers.ts) reads the client's row and
// the failure counters, then the token: two round trips one after the other
// through the ORM, far more CPU than a token costs, and a resource server
// may introspect on every call it receives. Here one statement
// authenticates the client, reads its counters and selects the token; calls
// arriving while a statement is in flight go together in the next one.
//
// The statement holds no rule of its own, as the token endpoint's fast path
// (client-credentials-fast-path.ts): the client authentication is
// client-authentication.ts's SQL, the limits' the failure limits' own SQL, the
// token lookup introspection.ts's, the answer introspection.ts's. A request
// the statement does not authenticate (an unknown or public client, a wrong
// secret or method, a limit exceeded) goes to the pipeline, which answers its
// exact error and counts the failure (test/oauth/oauth-introspection-agreement.test.ts
// sends the same requests through both). Limits that offer no SQL leave every
// request to the pipeline.
import type { MikroORM } from "@mikro-orm/postgresql";
import { escapeIdentifier } from "pg";
import type { IntrospectTokenRequest, IntrospectTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ProtectedResources } from "../../shared/protected-resources.js";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { tokenHash } from "../../shared/token-hash.js";
import { hashSecret } from "../clients/client-secret.js";
import { counterColumns, type FailureLimits, type StoredFailureCheck } from "../rate-limit/failure-limits.js";
import { clientKnownSql, presentsSecret, secretAuthenticatesSql } from "./client-authentication.js";
import { activeTokenSql, introspectionAnswer, tokenKind, type ActiveToken } from "./introspection.js";

export interface IntrospectionFastPathDeps {
  orm: MikroORM;
  schema: string;
  limits: FailureLimits;
  issuer: string;
  resources: ProtectedResources;
  /** OAUTH_CLIENT_METADATA_DOCUMENTS (client-authentication.ts). */
  metadataDocuments?: boolean;
  /** Name the statement (not on the embedded start: client-credentials-fast-path.ts says why). */
  preparedStatements?: boolean;
}

/** Statements in flight at once; calls arriving meanwhile go together in the next one. */
const MAX_IN_FLIGHT = 2;
/** Calls in one statement at most. */
const MAX_BATCH = 64;

/**
 * The statement: each call a row of the first five arrays (numbered by "n"),
 * each of its counters a row of the next three, then the failure limits'
 * now (knex makes the placeholders positional). A row comes
 * back for each call whose client authenticates, with its token's columns
 * (null when the token is not active).
 */
function statement(deps: IntrospectionFastPathDeps, limits: StoredFailureCheck): string {
  // "q": the lookup's own aliases (a, r, g) are inside the lateral subquery.
  return `with "request" as (
            select * from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) with ordinality
              as q("client_id", "secret_hash", "method", "hash", "kind", "n")),
          "counter" as (
            select * from unnest(?::bigint[], ?::text[], ?::integer[]) as k("n", "key", "limit"))
          select q."n", t."client_id", t."organisation_id", t."scopes", t."audience", t."created_at", t."expires_at", t."token_type"
            from "request" q join ${escapeIdentifier(deps.schema)}."client" c on c."id" = q."client_id"
            left join lateral (${activeTokenSql(deps.schema, 'q."hash"', 'q."kind"')}) t on true
           where ${secretAuthenticatesSql("c", 'q."secret_hash"', 'q."method"')}
             and ${clientKnownSql("c", deps.metadataDocuments)}
             and not ${limits.overLimitSql('(select "key", "limit" from "counter" where "counter"."n" = q."n")', "?")}`;
}

interface Call {
  clientId: string;
  secretHash: string;
  method: string;
  hash: string;
  kind: string;
  counters: { key: string; limit: number }[];
}

/** The token's row when the client authenticated (null: no active token), undefined when it did not. */
type Looked = ActiveToken | null | undefined;

/** Answers an introspection whose client authenticates, or undefined (the caller then runs the pipeline). */
export function createIntrospectionFastPath(deps: IntrospectionFastPathDeps): (request: IntrospectTokenRequest) => Promise<IntrospectTokenResponse | undefined> {
  const stored = deps.limits.stored;
  if (!stored) return async () => undefined;
  // Without the ORM's per-query work (knex's raw); knex hands options() to pg, whose name makes it a named prepared statement.
  const knex = deps.orm.em.getKnex();
  const text = statement(deps, stored);
  const name = deps.preparedStatements ? { name: "introspection-fast-path" } : {};

  const send = async (queued: Queued<Call, Looked>[]) => {
    const batch = queued.map((q) => q.item);
    const values = [
      batch.map((c) => c.clientId),
      batch.map((c) => c.secretHash),
      batch.map((c) => c.method),
      batch.map((c) => c.hash),
      batch.map((c) => c.kind),
      ...counterColumns(batch),
      stored.now(),
    ];
    const { rows } = await knex.raw<{ rows: (Partial<ActiveToken> & { n: string })[] }>(text, values).options(name);
    const found = new Map(rows.map((r) => [Number(r.n), r]));
    for (const [i, q] of queued.entries()) {
      const row = found.get(i + 1);
      q.resolve(row === undefined ? undefined : row.client_id == null ? null : (row as ActiveToken));
    }
  };

  const lookUp = statementBatcher<Call, Looked>({ atOnce: MAX_IN_FLIGHT, max: MAX_BATCH, write: send });

  return async (request) => {
    const credentials = request.client;
    if (!credentials?.clientId || !presentsSecret(credentials)) return undefined;
    const looked = await lookUp({
      clientId: credentials.clientId,
      secretHash: hashSecret(credentials.clientSecret),
      method: credentials.method,
      hash: tokenHash(request.token),
      kind: tokenKind(request.token),
      counters: stored.counters("client", credentials.clientId, request.remoteAddress),
    });
    if (looked === undefined) return undefined;
    return introspectionAnswer(looked ?? undefined, credentials.clientId, deps.issuer, deps.resources);
  };
}
