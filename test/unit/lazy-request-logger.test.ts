// The gateway's request logger is made only when a line is written
// (gateway/lazy-request-logger.ts): Fastify checks its methods for every
// request, and a level that writes nothing must not make it (nor the
// request's trace its bindings carry).
import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import pino from "pino";
import { expect, it } from "vitest";
import { lazyRequestLogger } from "../../gateway/lazy-request-logger.js";

function setup(level: string) {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({ write: (chunk, _, done) => (lines.push(JSON.parse(String(chunk))), done()) });
  const parent = pino({ level }, out);
  let made = 0;
  const log = lazyRequestLogger(parent as unknown as FastifyBaseLogger & { isLevelEnabled(l: string): boolean }, () => {
    made++;
    return parent.child({ requestId: "r1", traceId: "t1" }) as unknown as FastifyBaseLogger;
  });
  return { log, lines, made: () => made };
}

it("makes nothing while nothing is written: methods exist, a level that is off writes nothing", () => {
  const { log, lines, made } = setup("warn");
  for (const m of ["info", "error", "debug", "fatal", "warn", "trace", "child"] as const) expect(typeof log[m]).toBe("function");
  log.info({ a: 1 }, "not written");
  log.debug("nor this");
  expect(made()).toBe(0);
  expect(lines).toEqual([]);
});

it("makes the child once, at the first line written, and every line carries its bindings", () => {
  const { log, lines, made } = setup("info");
  log.info({ a: 1 }, "first");
  log.warn("second");
  expect(made()).toBe(1);
  expect(lines.map((l) => [l.msg, l.requestId, l.traceId])).toEqual([
    ["first", "r1", "t1"],
    ["second", "r1", "t1"],
  ]);
  expect(lines[0]!.a).toBe(1);
});

it("a child of it is made from the request's child", () => {
  const { log, lines, made } = setup("info");
  log.child({ extra: true }).info("from the child");
  expect(made()).toBe(1);
  expect(lines[0]).toMatchObject({ msg: "from the child", requestId: "r1", traceId: "t1", extra: true });
  expect(log.level).toBe("info");
});

it("a level set on it is the request's own: the child is made with it, and its lines follow it", () => {
  const { log, lines, made } = setup("warn");
  log.level = "debug";
  expect(made()).toBe(1);
  expect(log.level).toBe("debug");
  log.debug("now written");
  expect(lines.map((l) => l.msg)).toEqual(["now written"]);
});
