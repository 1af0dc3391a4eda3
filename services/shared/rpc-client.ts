// Clients between services: Connect over HTTP/1.1 with a deadline on every
// call, the internal credential, and the caller's request id.
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { validateReadWriteMaxBytes } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-connect";
import { REQUEST_ID_HEADER, currentRequestId } from "./request-context.js";
import { createHttp1Client } from "./rpc-http-client.js";
import { INTERNAL_AUTH_HEADER } from "./rpc-server.js";

export interface RpcClientOptions {
  baseUrl: string;
  timeoutMs: number;
  internalToken?: string;
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
  // connect-node's createConnectTransport with its defaults, over the one-write HTTP/1.1 client.
  const transport = createTransport({
    baseUrl: options.baseUrl,
    httpClient: createHttp1Client().request,
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    interceptors: [propagate],
    acceptCompression: [compressionGzip, compressionBrotli],
    sendCompression: null,
    ...validateReadWriteMaxBytes(undefined, undefined, undefined),
  });
  return createClient(service, transport);
}
