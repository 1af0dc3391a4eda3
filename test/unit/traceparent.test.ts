// W3C Trace Context's traceparent as this project reads and writes it
// (services/shared/trace/traceparent.ts). Pure: no platform.
import { describe, expect, it } from "vitest";
import {
  SAMPLED,
  acceptTracestate,
  continueTrace,
  formatTraceparent,
  newSpanId,
  newTraceId,
  parseTraceparent,
  traceIdOf,
} from "../../services/shared/trace/traceparent.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${PARENT}-01`;
const FORMAT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

describe("parseTraceparent", () => {
  it("reads the specification's example", () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE, parentId: PARENT, flags: 1 });
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: 0 });
  });

  it("refuses uppercase hex (the fields are HEXDIGLC)", () => {
    expect(parseTraceparent(`00-${TRACE.toUpperCase()}-${PARENT}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${TRACE}-${PARENT.toUpperCase()}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-0A`)).toBeUndefined();
  });

  it("refuses an all-zero trace id or parent id", () => {
    expect(parseTraceparent(`00-${"0".repeat(32)}-${PARENT}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${TRACE}-${"0".repeat(16)}-01`)).toBeUndefined();
  });

  it("refuses version ff, wrong lengths, missing fields and garbage", () => {
    for (const bad of [
      `ff-${TRACE}-${PARENT}-01`,
      `00-${TRACE.slice(1)}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}0-01`,
      `00-${TRACE}-${PARENT}-1`,
      `00-${TRACE}-${PARENT}`,
      `00_${TRACE}_${PARENT}_01`,
      "",
      "hello",
      undefined,
      null,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });

  it("version 00 has exactly four fields", () => {
    expect(parseTraceparent(`${VALID}-extra`)).toBeUndefined();
  });

  it("a higher version is read by its first four fields; what follows must start with a dash", () => {
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-01-what-the-future-holds`)).toEqual({
      traceId: TRACE,
      parentId: PARENT,
      flags: 1,
    });
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-01.future`)).toBeUndefined();
  });

  it("is sent on as version 00, flags kept", () => {
    const future = parseTraceparent(`cc-${TRACE}-${PARENT}-09-future`)!;
    expect(formatTraceparent(future)).toBe(`00-${TRACE}-${PARENT}-09`);
  });
});

describe("continueTrace", () => {
  it("keeps the trace id and flags, with a new parent id", () => {
    const next = continueTrace(VALID);
    expect(next).toMatch(FORMAT);
    expect(traceIdOf(next)).toBe(TRACE);
    expect(next.slice(36, 52)).not.toBe(PARENT);
    expect(next.endsWith("-01")).toBe(true);
    expect(continueTrace(`00-${TRACE}-${PARENT}-00`).endsWith("-00")).toBe(true);
  });

  it("starts a new sampled trace when there is none or it is invalid", () => {
    for (const incoming of [
      undefined,
      "",
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `00-${"0".repeat(32)}-${PARENT}-01`,
    ]) {
      const started = continueTrace(incoming);
      expect(started).toMatch(FORMAT);
      expect(traceIdOf(started)).not.toBe(TRACE);
      expect(parseTraceparent(started)!.flags & SAMPLED).toBe(SAMPLED);
    }
  });

  it("makes distinct, valid ids", () => {
    const traces = new Set(Array.from({ length: 1000 }, () => newTraceId()));
    const spans = new Set(Array.from({ length: 1000 }, () => newSpanId()));
    expect(traces.size).toBe(1000);
    expect(spans.size).toBe(1000);
    for (const t of traces) expect(t).toMatch(/^[0-9a-f]{32}$/);
    for (const s of spans) expect(s).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("acceptTracestate", () => {
  it("passes a plausible list on as is, drops anything else", () => {
    expect(acceptTracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).toBe("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    expect(acceptTracestate("x".repeat(513))).toBeUndefined();
    expect(acceptTracestate("a=b\nc=d")).toBeUndefined();
    expect(acceptTracestate(undefined)).toBeUndefined();
  });
});
