// What the lean server (lean-server.ts) hands to the interceptors and the
// handler of one call: connect's UnaryRequest, HandlerContext and
// UnaryResponse, whose lazy members (the signal, the response headers and
// trailers, made only when read) are getters of these classes.
//
// Why classes: an object literal with getters (`{ get header() { … } }`)
// made on every call gets getter closures of its own each time, and V8 then
// gives each such object a map of its own, in dictionary mode. Those objects
// outlived young-generation collections: measured in a scratch harness (the
// in-process hop alone, handler canned, 13 calls in flight), 1.1-1.5 MB was
// promoted to the old generation at every scavenge with the literals, and a
// plain loop making them promoted 2.9 MB a scavenge where one making class
// instances promoted none (bench/profile-findings.md). Getters on a class's
// prototype are shared by every instance: one map, nothing kept.
import type { DescMethodUnary, DescService, Message } from "@bufbuild/protobuf";
import type { ContextValues, HandlerContext, UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import type { CallSignal } from "./call-signal.js";

/** A call's response header and trailer, made when first read. */
export class ResponseMetadata {
  private madeHeader: Headers | undefined;
  private madeTrailer: Headers | undefined;

  get header(): Headers {
    return (this.madeHeader ??= new Headers());
  }

  get trailer(): Headers {
    return (this.madeTrailer ??= new Headers());
  }

  /** The header if anything made it (undefined: nothing to send). */
  get headerIfMade(): Headers | undefined {
    return this.madeHeader;
  }

  get trailerIfMade(): Headers | undefined {
    return this.madeTrailer;
  }
}

/**
 * The request as interceptors see it. Its signal is a getter (the
 * AbortController is made only when read), so an interceptor that passes on
 * a spread copy (`next({ ...req, … })`) passes no signal; the handler's
 * context reads the call's signal itself, not the request's.
 */
export class ServedRequest implements UnaryRequest {
  readonly stream = false;
  readonly requestMethod = "POST";

  constructor(
    readonly service: DescService,
    readonly method: DescMethodUnary,
    readonly url: string,
    readonly header: Headers,
    readonly contextValues: ContextValues,
    readonly message: Message,
    private readonly call: CallSignal,
  ) {}

  get signal(): AbortSignal {
    return this.call.signal;
  }
}

/** The handler's context, made from the request the interceptors passed on. */
export class ServedContext implements HandlerContext {
  readonly protocolName = "connect";
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly requestMethod: string;
  readonly url: string;
  readonly requestHeader: Headers;
  readonly values: ContextValues;

  constructor(
    request: UnaryRequest,
    private readonly call: CallSignal,
    private readonly deadline: number | undefined,
    private readonly response: ResponseMetadata,
  ) {
    this.service = request.service;
    this.method = request.method;
    this.requestMethod = request.requestMethod;
    this.url = request.url;
    this.requestHeader = request.header;
    this.values = request.contextValues;
  }

  readonly timeoutMs = (): number | undefined => (this.deadline === undefined ? undefined : this.deadline - Date.now());

  get signal(): AbortSignal {
    return this.call.signal;
  }

  get responseHeader(): Headers {
    return this.response.header;
  }

  get responseTrailer(): Headers {
    return this.response.trailer;
  }
}

/** The handler's answer, as interceptors see it on its way back. */
export class ServedResponse implements UnaryResponse {
  readonly stream = false;

  constructor(
    readonly service: DescService,
    readonly method: DescMethodUnary,
    readonly message: Message,
    private readonly response: ResponseMetadata,
  ) {}

  get header(): Headers {
    return this.response.header;
  }

  get trailer(): Headers {
    return this.response.trailer;
  }
}
