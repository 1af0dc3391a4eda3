// Clients between services: Connect over HTTP/1.1 with a deadline on every
// call, the internal credential, and the caller's request id.
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { validateReadWriteMaxBytes, type UniversalClientFn } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-connect";
import { REQUEST_ID_HEADER, currentRequestId } from "./request-context.js";
import { createHttp1Client } from "./rpc-http-client.js";
import { INTERNAL_AUTH_HEADER } from "./rpc-server.js";

export interface RpcClientOptions {
  baseUrl: string;
  timeoutMs: number;
  internalToken?: string;
}

/** Servers of this process that clients reach in memory, by origin (see serveInProcess). */
const inProcessServers = new Map<string, UniversalClientFn>();

/**
 * The embedded start: calls to `baseUrl` go to that server's handlers in this
 * process, through the same interceptors and the same Connect encoding, but
 * without loopback HTTP (on the project's machine a loopback round trip cost
 * more CPU than the read it carried). Returns the undo.
 */
export function serveInProcess(baseUrl: string, server: UniversalClientFn): () => void {
  const origin = new URL(baseUrl).origin;
  inProcessServers.set(origin, server);
  return () => {
    if (inProcessServers.get(origin) === server) inProcessServers.delete(origin);
  };
}

export function createRpcClient<T extends DescService>(service: T, options: RpcClientOptions): Client<T> {
  const authorization = options.internalToken ? `Bearer ${options.internalToken}` : undefined;
  const propagate: Interceptor = (next) => (req) => {
    // An id the caller set explicitly wins; otherwise the one of the request being served.
    const requestId = currentRequestId();
    if (requestId && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, requestId);
    if (authorization) req.header.set(INTERNAL_AUTH_HEADER, authorization);
    return next(req);
  };
  const http = createHttp1Client();
  const origin = new URL(options.baseUrl).origin;
  // connect-node's createConnectTransport with its defaults, over the one-write HTTP/1.1 client
  // (or in memory, when the server runs in this process and was offered with serveInProcess).
  const transport = createTransport({
    baseUrl: options.baseUrl,
    httpClient: (req) => (inProcessServers.get(origin) ?? http)(req),
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    interceptors: [propagate],
    acceptCompression: [compressionGzip, compressionBrotli],
    sendCompression: null,
    ...validateReadWriteMaxBytes(undefined, undefined, undefined),
  });
  return createClient(service, transport);
}
