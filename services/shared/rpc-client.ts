// Clients between services: Connect over HTTP/1.1 with a deadline on every
// call, the internal credential, and the caller's request id.
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { REQUEST_ID_HEADER, currentRequestId } from "./request-context.js";
import { INTERNAL_AUTH_HEADER } from "./rpc-server.js";

export interface RpcClientOptions {
  baseUrl: string;
  timeoutMs: number;
  internalToken?: string;
}

export function createRpcClient<T extends DescService>(service: T, options: RpcClientOptions): Client<T> {
  const propagate: Interceptor = (next) => (req) => {
    // An id the caller set explicitly wins; otherwise the one of the request being served.
    const requestId = currentRequestId();
    if (requestId && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, requestId);
    if (options.internalToken) req.header.set(INTERNAL_AUTH_HEADER, `Bearer ${options.internalToken}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    interceptors: [propagate],
  });
  return createClient(service, transport);
}
