// W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
// header a request arrives with, the one this process sends on, and the
// tracestate that travels beside it. Parsing is @opentelemetry/core's (the
// W3CTraceContextPropagator's parser); this file adds what a process without
// the SDK needs: new ids, and the next hop's header.
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

/**
 * The traceparent in a header value, or undefined when there is none or it is
 * invalid: §3.2.2.1 "version: 2HEXDIGLC", "ff" is invalid; §3.2.2.3
 * "trace-id … All bytes as zero … is considered an invalid value"; §3.2.2.4
 * parent-id likewise; version 00 is exactly four fields; §3.2.4 "If a higher
 * version is detected, the implementation SHOULD try to parse it by trying
 * the following: … If the size of the header is longer than 55, parse the next
 * character and check that it is a dash". Uppercase hex is refused
 * (the fields are HEXDIGLC).
 */
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
 * The header a hop sends on: the same trace and flags with `spanId` as the
 * parent, or a new trace (sampled) when the incoming header was absent or
 * invalid (§3.2.2: vendors MUST NOT fail the request; "the vendor creates a
 * new traceparent").
 */
export function continueTrace(incoming: string | undefined | null, spanId: string = newSpanId()): string {
  const parent = parseTraceparent(incoming);
  return formatTraceparent(
    parent ? { ...parent, parentId: spanId } : { traceId: newTraceId(), parentId: spanId, flags: SAMPLED },
  );
}

/**
 * tracestate is passed on as received when it is a plausible list (§3.3.1.1:
 * up to 32 list members, at most 512 characters are guaranteed to propagate);
 * anything else is dropped, never a reason to fail.
 */
export function acceptTracestate(value: string | undefined | null): string | undefined {
  return value && value.length <= 512 && /^[\x20-\x7e]+$/.test(value) ? value : undefined;
}

/**
 * The tracestate to pass on with a request's trace: none unless the
 * traceparent beside it parses (W3C Trace Context §3.3.1: "If the vendor
 * failed to parse traceparent, it MUST NOT attempt to parse tracestate"; a
 * new trace starts without it). The traceparent is parsed only when a
 * tracestate came, which most requests do not send.
 */
export function continuedTracestate(
  traceparent: string | undefined | null,
  tracestate: string | undefined | null,
): string | undefined {
  return tracestate && parseTraceparent(traceparent) ? acceptTracestate(tracestate) : undefined;
}

// Ids from crypto.randomUUID(), which draws on Node's own cache of random
// bytes: randomBytes() asks the kernel on every call, and a request makes
// several ids. W3C Trace Context §3.2.2.3 asks a trace-id to be random, not
// secret: a version 4 UUID has 122 random bits (the version digit, index 12
// without dashes, and the variant digit, index 16, are fixed), and its fixed
// version digit keeps a trace-id from being all zeroes.
const randomHex32 = () => randomUUID().replaceAll("-", "");

export function newTraceId(): string {
  return randomHex32();
}

export function newSpanId(): string {
  for (;;) {
    // §3.2.2.4: 8 bytes, the UUID's 16 random digits before its variant digit and the one after it.
    const hex = randomHex32();
    const id = `${hex.slice(0, 12)}${hex.slice(13, 16)}${hex[17]}`;
    // All zeroes is invalid (astronomically rare; drawn again).
    if (id !== "0000000000000000") return id;
  }
}
