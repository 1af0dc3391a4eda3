// The client an authorization request names: a registered client's row, or,
// when the client_id is a URL (Client ID Metadata Documents), the client its
// metadata document describes, fetched when not known yet or when the kept
// copy has expired (metadata-document/).
//
// The token side does not fetch: a code or refresh token exists only for a
// client an authorization request resolved, and its row is used as kept,
// expired or not (tokens/client-authentication.ts). A changed or withdrawn
// document takes effect at the next authorization request.
import { readFileSync } from "node:fs";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Client as ClientMessage } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { ConfigError, type Config } from "../../shared/config.js";
import type { Logger } from "../../shared/logger.js";
import { targetResolver } from "../../shared/net/dns-resolver.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import { createAddressLimit } from "../rate-limit/address-limit.js";
import { toClientMessage } from "./client-message.js";
import { ClientEntity } from "./client.entity.js";
import { cacheSeconds } from "./metadata-document/cache-lifetime.js";
import { checkDocumentUrl, isDocumentClientId } from "./metadata-document/client-id-url.js";
import { DocumentRefusal } from "./metadata-document/document-refusal.js";
import { createDocumentFetcher } from "./metadata-document/fetch-document.js";
import { parseDocument } from "./metadata-document/parse-document.js";
import { storeDocumentClient } from "./metadata-document/document-store.js";

/** The client of an authorization request, or null when there is none (an unknown client_id). */
export type ClientLookup = (clientId: string) => Promise<ClientMessage | null>;

/** The authorization request a lookup is made for. */
export interface LookupContext {
  /**
   * What is left of the call's deadline (HandlerContext.timeoutMs()): a
   * document fetch ends DEADLINE_MARGIN_MS before it, so that its refusal,
   * not the caller's timeout, is what the member sees.
   */
  remainingMs?: number;
  /** The browser's address: document fetches (not the kept copies) count against its limit. */
  remoteAddress?: string;
}

export type ClientResolver = (clientId: string, context?: LookupContext) => Promise<ClientMessage | null>;

/** A minute: OAUTH_CLIENT_METADATA_FETCH_LIMIT is per minute. */
const FETCH_LIMIT_WINDOW_SECONDS = 60;

/** Left of a call's deadline for storing the client and answering, after a document fetch. */
export const DEADLINE_MARGIN_MS = 500;
/** The shortest fetch tried, however little of the deadline is left. */
const MIN_FETCH_MS = 100;

export interface ClientResolverDeps {
  orm: MikroORM;
  config: Config;
  /** OAUTH_ALLOW_INSECURE_REDIRECTS: http loopback document URLs, and loopback or private addresses at connect time. */
  allowInsecureRedirects: boolean;
  logger?: Logger;
}

/**
 * A lookup for authorization requests. A metadata document that cannot be
 * fetched or used throws invalid_request shown on the page (never a redirect).
 */
export function createClientResolver(deps: ClientResolverDeps): ClientResolver {
  const { orm, config } = deps;
  const documents = config.OAUTH_CLIENT_METADATA_DOCUMENTS;
  const allowInsecure = deps.allowInsecureRedirects;
  const fetchDocument = documents
    ? createDocumentFetcher({
        resolve: targetResolver({
          timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS,
          servers: config.WEBHOOK_DNS_SERVERS,
          allowInsecure,
        }),
        allowInsecure,
        timeoutMs: config.OAUTH_CLIENT_METADATA_TIMEOUT_MS,
        extraCa: readCaFile(config.OAUTH_CLIENT_METADATA_CA_FILE),
      })
    : undefined;
  // Anyone can send an authorization request naming a new https client_id,
  // and each one makes this service fetch that URL: at most so many a minute
  // per address, cache hits free.
  const fetchLimit = createAddressLimit(orm, AUTH_SCHEMA, {
    name: "metadata_fetch",
    points: config.OAUTH_CLIENT_METADATA_FETCH_LIMIT,
    windowSeconds: FETCH_LIMIT_WINDOW_SECONDS,
    description:
      "too many authorization requests from this address named applications whose client metadata document this server had to fetch; try again later",
  });

  const fetchAndStore = async (url: URL, remainingMs: number | undefined) => {
    const configured = config.OAUTH_CLIENT_METADATA_TIMEOUT_MS;
    const timeoutMs =
      remainingMs === undefined
        ? configured
        : Math.max(MIN_FETCH_MS, Math.min(configured, remainingMs - DEADLINE_MARGIN_MS));
    const fetched = await fetchDocument!(url, timeoutMs);
    const metadata = parseDocument(url.href, fetched.body, { allowInsecure });
    const fetchedAt = new Date();
    const expiresAt = new Date(fetchedAt.getTime() + cacheSeconds(fetched.cacheControl) * 1000);
    return storeDocumentClient(orm, AUTH_SCHEMA, { url: url.href, metadata, fetchedAt, expiresAt });
  };

  return async (clientId, context = {}) => {
    if (!clientId) return null;
    const row = await orm.em.fork().findOne(ClientEntity, { id: clientId });
    const isDocumentClient = row?.registration === "metadata_document";
    // Off: a URL is an unknown client_id, and so is a stored document client.
    if (isDocumentClient && !documents) return null;
    if (!documents || !isDocumentClientId(clientId) || (row && !isDocumentClient))
      return row ? toClientMessage(row) : null;
    // The kept copy, until it expires (metadata-document/cache-lifetime.ts).
    if (row?.metadataExpiresAt && row.metadataExpiresAt.getTime() > Date.now()) return toClientMessage(row);
    try {
      const url = checkDocumentUrl(clientId, allowInsecure);
      await fetchLimit.consume(context.remoteAddress ?? "");
      return toClientMessage(await fetchAndStore(url, context.remainingMs));
    } catch (err) {
      if (!(err instanceof DocumentRefusal)) throw err;
      deps.logger?.warn({ err, clientId: err.url }, "client metadata document refused");
      throw err.toOAuthFailure();
    }
  };
}

function readCaFile(path: string | undefined): string | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError("OAUTH_CLIENT_METADATA_CA_FILE", `cannot be read: ${(err as Error).message}`);
  }
}
