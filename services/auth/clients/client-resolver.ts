// The client an authorization request names: a registered client's row, or,
// for a URL client_id, the client its metadata document describes, fetched
// when not known yet or when the kept copy has expired (metadata-document/).
// The token side never fetches: it uses the kept row, expired or not.
import type { Client as ClientMessage } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import type { AuthServiceDeps } from "../auth-service-deps.js";
import { InvalidRequest, onPageOnly } from "../oauth-errors.js";
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
interface LookupContext {
  /**
   * What is left of the call's deadline: a fetch ends before it, so that
   * its refusal, not a timeout, is what the member sees.
   */
  remainingMs?: number;
  /** The browser's address: document fetches (not the kept copies) count against its limit. */
  remoteAddress?: string;
}

/** Left of a call's deadline for storing the client and answering, after a document fetch. */
const DEADLINE_MARGIN_MS = 500;
/** The shortest fetch tried, however little of the deadline is left. */
const MIN_FETCH_MS = 100;

/** A document that cannot be fetched or used throws invalid_request shown on the page (never a redirect). */
export function createClientResolver(
  deps: Pick<AuthServiceDeps, "orm" | "config" | "allowInsecureRedirects" | "logger">,
): (clientId: string, context?: LookupContext) => Promise<ClientMessage | null> {
  const { orm, config } = deps;
  const documents = config.OAUTH_CLIENT_METADATA_DOCUMENTS;
  const allowInsecure = deps.allowInsecureRedirects;
  const fetchDocument = documents ? createDocumentFetcher(config, allowInsecure) : undefined;
  // Anyone can make this service fetch a URL by naming it as client_id: so many a minute per address, cache hits free.
  const fetchLimit = createAddressLimit(orm, AUTH_SCHEMA, {
    name: "metadata_fetch",
    points: config.OAUTH_CLIENT_METADATA_FETCH_LIMIT,
    windowSeconds: 60,
    description:
      "too many authorization requests from this address named applications whose client metadata document this server had to fetch; try again later",
  });

  const fetchAndStore = async (url: URL, remainingMs: number | undefined) => {
    const configured = config.OAUTH_CLIENT_METADATA_TIMEOUT_MS;
    const timeoutMs = Math.max(MIN_FETCH_MS, Math.min(configured, (remainingMs ?? Infinity) - DEADLINE_MARGIN_MS));
    const fetched = await fetchDocument!(url, timeoutMs);
    const metadata = parseDocument(url.href, fetched.body, { allowInsecure });
    const fetchedAt = new Date();
    const expiresAt = new Date(fetchedAt.getTime() + cacheSeconds(fetched.cacheControl) * 1000);
    return storeDocumentClient(orm, AUTH_SCHEMA, url.href, metadata, { fetchedAt, expiresAt });
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
      throw onPageOnly(new InvalidRequest(err.message));
    }
  };
}
