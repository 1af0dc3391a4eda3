// The fetch of one client metadata document, through an undici Agent whose
// connect-time lookup is the webhook deliveries' (services/shared/net/
// safe-lookup.ts): a host with any address that is not public is refused at
// connect time. One timeout bounds the whole fetch; the body is capped; each
// connection is closed after its answer (fetches are rare; no pool).
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { Agent, request } from "undici";
import { ConfigError, type Config } from "../../../shared/config.js";
import { targetResolver } from "../../../shared/net/dns-resolver.js";
import { DestinationRefusedError, checkLiteralHost, safeLookup } from "../../../shared/net/safe-lookup.js";
import { decodeUtf8 } from "../../../shared/strict-json.js";
import { DocumentRefusal } from "./document-refusal.js";

/** The largest document read: a few KiB is plenty for client metadata. */
const MAX_DOCUMENT_BYTES = 5 * 1024;
const USER_AGENT = "bizcard-auth/1 (client metadata)";

/** RFC 8259 §11 application/json, or a structured +json type (RFC 6839 §3.1). */
const isJsonType = (value: string | undefined) => /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(value ?? "");

/**
 * Fetches the document at `url` within `timeoutMs`: its body and Cache-Control
 * (cache-lifetime.ts). allowInsecure: loopback and private destinations allowed.
 */
export function createDocumentFetcher(config: Config, allowInsecure: boolean) {
  const configuredMs = config.OAUTH_CLIENT_METADATA_TIMEOUT_MS;
  const dns = { timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS, servers: config.WEBHOOK_DNS_SERVERS, allowInsecure };
  const extraCa = readCaFile(config.OAUTH_CLIENT_METADATA_CA_FILE);
  const agent = new Agent({
    connect: {
      lookup: safeLookup(targetResolver(dns), allowInsecure),
      timeout: configuredMs,
      ...(extraCa ? { ca: [...rootCertificates, extraCa] } : {}),
    },
    headersTimeout: configuredMs,
    bodyTimeout: configuredMs,
  });
  return async (url: URL, timeoutMs: number): Promise<{ body: string; cacheControl: string | undefined }> => {
    const refuse = (what: string, cause?: unknown) => new DocumentRefusal(url.href, what, { cause });
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      checkLiteralHost(url, allowInsecure);
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
        // draft-ietf-oauth-client-id-metadata-document: "A successful response MUST use the 200 OK HTTP status
        // code, have the content type of application/json or [...] application/<AS-defined>+json"; "The
        // authorization server MUST NOT automatically follow HTTP redirects".
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
        // The rest of the body is not wanted; undici reports its early destruction as an AbortError, expected here.
        if (!res.body.destroyed) res.body.on("error", () => undefined).destroy();
      }
    } catch (err) {
      if (err instanceof DocumentRefusal) throw err;
      throw refusalOf(err, signal, timeoutMs, refuse);
    }
  };
}

/** PEM certificates trusted besides the system's roots. */
function readCaFile(path: string | undefined): string | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError("OAUTH_CLIENT_METADATA_CA_FILE", `cannot be read: ${(err as Error).message}`);
  }
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
    return refuse(`did not answer within ${Number((timeoutMs / 1000).toFixed(1))} s`, err);
  }
  if (e?.code === "ENOTFOUND" || e?.code === "ENODATA")
    return refuse("could not be fetched: its host name has no address", err);
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(e?.code ?? ""))
    return refuse(`could not be fetched: its TLS certificate is not trusted (${e.code})`, err);
  return refuse(`could not be fetched (${e?.code ?? e?.name ?? "network error"})`, err);
}
