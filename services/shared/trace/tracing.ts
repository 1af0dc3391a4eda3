// Spans, exported through the OpenTelemetry SDK only when an OTLP endpoint is
// configured. Without one no SDK is loaded (the imports below are dynamic),
// no span object is made, and a hop costs a new span id in its traceparent.
//
// The standard variables, read here and by the SDK:
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL, as is
//   OTEL_EXPORTER_OTLP_ENDPOINT         the base URL: traces go to <it>/v1/traces
//   OTEL_SERVICE_NAME                   overrides service.name (bizcard-<process>)
//   OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_* …  read by the SDK itself.
// OTLP/HTTP with JSON bodies ("OTLP/HTTP … binary Protobuf or JSON", the OTLP
// specification); spans leave in batches (BatchSpanProcessor).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from "@opentelemetry/api";
import { continueTrace, formatTraceparent, parseTraceparent } from "./traceparent.js";

export type TracingState = "on" | "off";

export interface Tracing {
  state: TracingState;
  /** Where spans go (undefined when off). */
  url?: string;
  /** Sends the spans ended so far (tests; a drain). */
  flush(): Promise<void>;
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}

let tracer: Tracer | undefined;
let running: Tracing | undefined;

const OFF: Tracing = { state: "off", flush: async () => {}, shutdown: async () => {} };

/** The traces URL the environment asks for, if any. */
export function tracesUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // OTLP exporter specification: the per-signal path is appended to the base endpoint.
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
}

/**
 * Starts exporting spans when the environment names an OTLP endpoint; else
 * does nothing and reports "off". Once per process (a second call returns the
 * first one's handle until it is shut down).
 */
export async function startTracing(processName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing> {
  if (running) return running;
  const url = tracesUrl(env);
  if (!url) return OFF;
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all(
    [
      import("@opentelemetry/sdk-trace"),
      import("@opentelemetry/exporter-trace-otlp-http"),
      import("@opentelemetry/resources"),
    ],
  );
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || `bizcard-${processName}` }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
  });
  tracer = provider.getTracer("bizcard");
  const handle: Tracing = {
    state: "on",
    url,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      if (running === handle) {
        running = undefined;
        tracer = undefined;
      }
      await provider.shutdown();
    },
  };
  running = handle;
  return handle;
}

/** "on" while spans are exported, else "off". */
export function tracingState(): TracingState {
  return tracer ? "on" : "off";
}

/** A unit of this process's work within a trace. */
export interface WorkSpan {
  /** What calls made for this work send: this span as the parent. */
  traceparent: string;
  /** Ends the span (an error marks it failed; attributes known only now, an HTTP status). A no-op when tracing is off. */
  end(error?: unknown, attributes?: Attributes): void;
}

export type WorkKind = "server" | "client" | "producer" | "consumer" | "internal";

const KINDS: Record<WorkKind, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

const noop = () => {};

/**
 * Starts the span of some work whose caller sent `incoming` (a traceparent,
 * possibly absent or invalid: then a new trace begins).
 */
export function startSpan(
  name: string,
  incoming: string | undefined | null,
  kind: WorkKind,
  attributes?: Attributes,
): WorkSpan {
  if (!tracer) return { traceparent: continueTrace(incoming), end: noop };
  const parent = parseTraceparent(incoming);
  const context = parent
    ? trace.setSpanContext(ROOT_CONTEXT, {
        traceId: parent.traceId,
        spanId: parent.parentId,
        traceFlags: parent.flags,
        isRemote: true,
      })
    : ROOT_CONTEXT;
  const span = tracer.startSpan(name, { kind: KINDS[kind], attributes }, context);
  const own = span.spanContext();
  return {
    traceparent: formatTraceparent({ traceId: own.traceId, parentId: own.spanId, flags: own.traceFlags }),
    end(error, attributes) {
      if (attributes) span.setAttributes(attributes);
      if (error !== undefined)
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
    },
  };
}
