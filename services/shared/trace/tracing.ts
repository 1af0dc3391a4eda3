// Spans, exported through the OpenTelemetry SDK (OTLP/HTTP, in batches) only
// when an OTLP endpoint is configured (the standard OTEL_* variables). Without
// one no SDK is loaded (the imports are dynamic) and no span object is made:
// a hop costs a new span id in its traceparent.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from "@opentelemetry/api";
import { continueTrace, formatTraceparent, parseTraceparent } from "./traceparent.js";

type TracingState = "on" | "off";

export interface Tracing {
  state: TracingState;
  url?: string;
  /** Sends the spans ended so far (tests; a drain). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let tracer: Tracer | undefined;
let running: Tracing | undefined;

const OFF: Tracing = { state: "off", flush: async () => {}, shutdown: async () => {} };

export function tracesUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // OTLP exporter specification: the per-signal path is appended to the base endpoint.
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
}

/** Starts exporting spans when the environment names an OTLP endpoint, once per process; else reports "off". */
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

export function tracingState(): TracingState {
  return tracer ? "on" : "off";
}

/** A unit of this process's work within a trace. */
export interface WorkSpan {
  /** What calls made for this work send: this span as the parent. */
  traceparent: string;
  /**
   * Ends the span (an error marks it failed; attributes known only now, an HTTP status). A no-op when tracing is off.
   */
  end(error?: unknown, attributes?: Attributes): void;
}

export type WorkKind = "server" | "client" | "producer" | "consumer" | "internal";

const noop = () => {};

/** Starts the span of some work whose caller sent `incoming` (absent or invalid: a new trace begins). */
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
  const spanKind = SpanKind[kind.toUpperCase() as Uppercase<WorkKind>];
  const span = tracer.startSpan(name, { kind: spanKind, attributes }, context);
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
