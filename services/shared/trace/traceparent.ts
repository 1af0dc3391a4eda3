// W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
// header a request arrives with, the one this process sends on, and the
// tracestate beside it. Parsing is @opentelemetry/core's; this file adds what
// a process without the SDK needs: new ids, and the next hop's header.
import { randomUUID } from "node:crypto";
import { parseTraceParent } from "@opentelemetry/core";

export const TRACEPARENT_HEADER = "traceparent";
export const TRACESTATE_HEADER = "tracestate";

export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  parentId: string;
  /** trace-flags: bit 0 is "sampled". */
  flags: number;
}

/** §3.2.2.5: "sampled": the caller may have recorded this trace. */
export const SAMPLED = 0x01;

/** The traceparent in a header value; undefined when absent or invalid (version ff, all-zero ids, uppercase hex). */
export function parseTraceparent(value: string | undefined | null): TraceParent | undefined {
  if (!value || value.length > 512) return undefined;
  const parsed = parseTraceParent(value);
  if (!parsed) return undefined;
  return { traceId: parsed.traceId, parentId: parsed.spanId, flags: parsed.traceFlags };
}

/** Version 00: what this process sends, whatever version it received (§3.2.4). */
export function formatTraceparent(t: TraceParent): string {
  return `00-${t.traceId}-${t.parentId}-${(t.flags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The trace id of a traceparent this process made or accepted (version 00). */
export function traceIdOf(traceparent: string): string {
  return traceparent.slice(3, 35);
}

/**
 * The header a hop sends on, `spanId` as the parent; absent or invalid, §3.2.2:
 * "the vendor creates a new traceparent" (sampled), never failing the request.
 */
export function continueTrace(incoming: string | undefined | null, spanId: string = newSpanId()): string {
  const parent = parseTraceparent(incoming);
  return formatTraceparent(
    parent ? { ...parent, parentId: spanId } : { traceId: newTraceId(), parentId: spanId, flags: SAMPLED },
  );
}

/** tracestate as received when plausible (§3.3.1.1: 512 characters are guaranteed to propagate); else dropped. */
export function acceptTracestate(value: string | undefined | null): string | undefined {
  return value && value.length <= 512 && /^[\x20-\x7e]+$/.test(value) ? value : undefined;
}

/** §3.3.1: "If the vendor failed to parse traceparent, it MUST NOT attempt to parse tracestate". */
export function continuedTracestate(
  traceparent: string | undefined | null,
  tracestate: string | undefined | null,
): string | undefined {
  return tracestate && parseTraceparent(traceparent) ? acceptTracestate(tracestate) : undefined;
}

// §3.2.2.3: random, not secret: randomUUID() draws on Node's cache of random bytes, and is never all zero.
const randomHex32 = () => randomUUID().replaceAll("-", "");

export function newTraceId(): string {
  return randomHex32();
}

export function newSpanId(): string {
  for (;;) {
    // §3.2.2.4: 8 bytes: the UUID's random digits, skipping its version (index 12) and variant (16) digits.
    const hex = randomHex32();
    const id = `${hex.slice(0, 12)}${hex.slice(13, 16)}${hex[17]}`;
    if (id !== "0000000000000000") return id;
  }
}
