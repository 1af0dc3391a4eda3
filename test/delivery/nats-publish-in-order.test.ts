// The NATS bus's publishInOrder (what the outbox relay uses to publish a batch
// without waiting for each acknowledgement in turn): whatever fails, the
// stream holds a prefix of the call, in order, never a later message without
// an earlier one. A message the stream does not take (its subject is outside
// the stream: no responders) stands for any failed publish.
import { randomUUID } from "node:crypto";
import { connect } from "nats";
import { afterEach, describe, expect, it } from "vitest";
import type { EventBus, OutgoingMessage } from "../../services/shared/event-bus/event-bus.js";
import { testConfig } from "../support/backends.js";
import { openTestBus } from "../support/services.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function start() {
  const config = testConfig();
  const bus: EventBus = await openTestBus(config);
  cleanups.push(() => bus.close());
  expect(bus.kind).toBe("nats");
  const message = (name: string, inStream = true): OutgoingMessage => ({
    subject: `${inStream ? config.NATS_SUBJECT_PREFIX : "elsewhere"}.contact.created`,
    data: new TextEncoder().encode(name),
    msgId: randomUUID(),
  });
  /** The stream's messages, oldest first, by their data. */
  const stored = async () => {
    const nc = await connect({ servers: config.NATS_URL! });
    try {
      const jsm = await nc.jetstreamManager();
      const info = await jsm.streams.info(config.NATS_STREAM);
      const out: string[] = [];
      for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
        out.push(new TextDecoder().decode((await jsm.streams.getMessage(config.NATS_STREAM, { seq })).data));
      }
      return out;
    } finally {
      await nc.close();
    }
  };
  return { bus, message, stored };
}

describe("NATS publishInOrder", () => {
  it("stores all of them, in order, and a second call of the same ids adds nothing", async () => {
    const { bus, message, stored } = await start();
    const messages = Array.from({ length: 50 }, (_, i) => message(`m${i}`));
    expect(await bus.publishInOrder!(messages)).toEqual({ published: 50 });
    expect(await stored()).toEqual(messages.map((_, i) => `m${i}`));
    // Published again (a relay that died before marking them): duplicates, dropped; the
    // chain breaks at the first (a duplicate is not the stream's last), which is no error.
    const again = await bus.publishInOrder!(messages);
    expect(again.error).toBeUndefined();
    expect(await stored()).toHaveLength(50);
  });

  it("a failed message in the middle: the ones before it are stored, none after it", async () => {
    const { bus, message, stored } = await start();
    await bus.publishInOrder!([message("before")]);
    const result = await bus.publishInOrder!([
      message("a"),
      message("b"),
      message("lost", false),
      message("c"),
      message("d"),
    ]);
    expect(result.published).toBe(2);
    expect(result.error).toBeDefined();
    expect(await stored()).toEqual(["before", "a", "b"]);
  });

  it("a failed first message: nothing after it is stored", async () => {
    const { bus, message, stored } = await start();
    await bus.publishInOrder!([message("before")]);
    const result = await bus.publishInOrder!([message("lost", false), message("a"), message("b")]);
    expect(result.published).toBe(0);
    expect(result.error).toBeDefined();
    expect(await stored()).toEqual(["before"]);
  });
});
