// The fetch of one client metadata document. draft-ietf-oauth-client-id-
// metadata-document: "A successful response MUST use the 200 OK HTTP status
// code, have the content type of application/json or a more specific content
// type that conforms to application/<AS-defined>+json [...] The authorization
// server MUST treat all other HTTP status codes and content types as an error
// response. The authorization server MUST NOT automatically follow HTTP
// redirects when retrieving the client registration information."
//
// Through an undici Agent whose connect-time lookup is the webhook
// deliveries' (services/shared/net/safe-lookup.ts): a name is resolved when
// the connection is made, and refused when any of its addresses is not
// public. At most MAX_DOCUMENT_BYTES are read; one timeout bounds the whole
// fetch, connect to the end of the body. Each connection is closed after its
// answer (fetches are rare; no pool is kept).
import { rootCertificates } from "node:tls";
import { Agent, request } from "undici";
import type { Resolver } from "../../../shared/net/dns-resolver.js";
import { DestinationRefusedError, checkLiteralHost, safeLookup } from "../../../shared/net/safe-lookup.js";
import { decodeUtf8 } from "../../../shared/strict-json.js";
import { DocumentRefusal } from "./document-refusal.js";

/** The largest document read: a few KiB is plenty for client metadata. */
export const MAX_DOCUMENT_BYTES = 5 * 1024;
const USER_AGENT = "bizcard-auth/1 (client metadata)";

export interface FetchedDocument {
  body: string;
  /** The answer's Cache-Control (cache-lifetime.ts). */
  cacheControl: string | undefined;
}

export interface DocumentFetcherOptions {
  resolve: Resolver;
  /** Loopback and private destinations allowed (development, tests). */
  allowInsecure: boolean;
  timeoutMs: number;
  /** PEM certificates trusted besides the system's roots (OAUTH_CLIENT_METADATA_CA_FILE). */
  extraCa?: string;
}

/** Fetches the document at `url` within `timeoutMs` (the configured timeout when unset). */
export type DocumentFetcher = (url: URL, timeoutMs?: number) => Promise<FetchedDocument>;

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;

/** RFC 8259 §11 application/json, or a structured +json type (RFC 6839 §3.1). */
const isJsonType = (value: string | undefined) => /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(value ?? "");

export function createDocumentFetcher(options: DocumentFetcherOptions): DocumentFetcher {
  const agent = new Agent({
    connect: {
      lookup: safeLookup(options.resolve, options.allowInsecure),
      timeout: options.timeoutMs,
      ...(options.extraCa ? { ca: [...rootCertificates, options.extraCa] } : {}),
    },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  return async (url, timeoutMs = options.timeoutMs) => {
    const refuse = (what: string, cause?: unknown) => new DocumentRefusal(url.href, what, { cause });
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      checkLiteralHost(url, options.allowInsecure);
      const res = await request(url, {
        dispatcher: agent,
        method: "GET",
        headers: { accept: "application/json", "user-agent": USER_AGENT },
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        reset: true,
      });
      try {
        if (res.statusCode >= 300 && res.statusCode < 400) {
          throw refuse(
            `was redirected (HTTP ${res.statusCode}): the metadata document must be served without redirects`,
          );
        }
        if (res.statusCode !== 200) throw refuse(`could not be fetched: it answered HTTP ${res.statusCode}`);
        const type = header(res.headers["content-type"]);
        if (!isJsonType(type))
          throw refuse(`is not served as JSON (Content-Type ${type ? JSON.stringify(type.slice(0, 100)) : "missing"})`);
        const tooLarge = () => refuse(`is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`);
        if (Number(header(res.headers["content-length"]) ?? 0) > MAX_DOCUMENT_BYTES) throw tooLarge();
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > MAX_DOCUMENT_BYTES) throw tooLarge();
          chunks.push(chunk);
        }
        // RFC 8259 §8.1: JSON text "MUST be encoded using UTF-8"; bytes that are not are refused, never read as U+FFFD.
        const body = decodeUtf8(Buffer.concat(chunks));
        if (body === undefined) throw refuse("is not valid UTF-8: JSON text must be encoded in UTF-8");
        return { body, cacheControl: header(res.headers["cache-control"]) };
      } finally {
        // Whatever is left of the body is not wanted (an error above, or a cap reached).
        // undici's body reports being destroyed early as an AbortError: expected here.
        if (!res.body.destroyed) res.body.on("error", () => undefined).destroy();
      }
    } catch (err) {
      if (err instanceof DocumentRefusal) throw err;
      throw refusalOf(err, signal, timeoutMs, refuse);
    }
  };
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

type Refuse = (what: string, cause?: unknown) => DocumentRefusal;

/** What went wrong with a fetch that got no usable answer, in words for the page. */
function refusalOf(err: unknown, signal: AbortSignal, timeoutMs: number, refuse: Refuse): DocumentRefusal {
  for (
    let e = err as { code?: string; message?: string; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e instanceof DestinationRefusedError || e.code === "ERR_DESTINATION_REFUSED") {
      return refuse(`resolves to a private address, which is refused (${e.message})`, err);
    }
  }
  const e = err as { code?: string; name?: string; message?: string };
  const timeouts = ["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"];
  if (signal.aborted || e?.name === "TimeoutError" || timeouts.includes(e?.code ?? "")) {
    return refuse(`did not answer within ${seconds(timeoutMs)}`, err);
  }
  if (e?.code === "ENOTFOUND" || e?.code === "ENODATA")
    return refuse("could not be fetched: its host name has no address", err);
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(e?.code ?? ""))
    return refuse(`could not be fetched: its TLS certificate is not trusted (${e.code})`, err);
  return refuse(`could not be fetched (${e?.code ?? e?.name ?? "network error"})`, err);
}
