// The NATS bus's ackFloor (the fan-out's watermark for ordered delivery): a
// stream sequence at or below which every message of a durable consumer was
// acknowledged. What the server reports, on a real server: nothing before the
// consumer exists, the floor below a batch still in hand, the last message's
// sequence once nothing is in hand (messages of other subjects after it do not
// hold it back), and, for a consumer created again after it was lost
// (startAfterSequence), the sequence it was created after, before any ack.
import { randomUUID } from "node:crypto";
import { connect } from "nats";
import { afterEach, expect, it } from "vitest";
import type { BusMessage, EventBus } from "../../services/shared/event-bus/event-bus.js";
import { testConfig } from "../support/backends.js";
import { waitFor } from "../support/processes.js";
import { openTestBus } from "../support/services.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

it("reports what every acknowledged message is at or below: none before the consumer, below a batch in hand, the end once idle, the start after a re-creation", async () => {
  const config = testConfig();
  const bus: EventBus = await openTestBus(config);
  cleanups.push(() => bus.close());
  expect(bus.kind).toBe("nats");
  const durable = `floor-${randomUUID().slice(0, 8)}`;
  const publish = (subject: string) =>
    bus.publish(`${config.NATS_SUBJECT_PREFIX}.${subject}`, new Uint8Array([1]), randomUUID());

  // No consumer yet: nothing is known to be handled.
  await publish("contact.created"); // seq 1
  expect(await bus.ackFloor!(durable)).toBeUndefined();

  // A consumer whose handler holds its second batch until released.
  const handled: number[] = [];
  let release: (() => void) | undefined;
  const consumer = await bus.consumeBatches!(
    { durable, subject: "contact.>", batchSize: 4, ackWaitMs: 5_000 },
    async (messages: BusMessage[]) => {
      if (messages.some((m) => m.streamSequence === 3)) await new Promise<void>((resolve) => (release = resolve));
      handled.push(...messages.map((m) => m.streamSequence!));
    },
  );
  cleanups.push(() => consumer.stop());
  await waitFor(
    async () => ((await bus.ackFloor!(durable)) === 1 ? true : undefined),
    10_000,
    "the floor at the first message",
  );

  await publish("other.thing"); // seq 2, another subject: not the consumer's
  await publish("contact.updated"); // seq 3, held in hand
  await waitFor(() => release, 10_000, "the batch in hand");
  // Held: the floor stays below it, whatever comes after.
  await publish("contact.created"); // seq 4
  expect(await bus.ackFloor!(durable)).toBe(1);
  release!();
  await waitFor(() => (handled.includes(4) ? true : undefined), 10_000, "the rest handled");
  await waitFor(
    async () => ((await bus.ackFloor!(durable)) === 4 ? true : undefined),
    10_000,
    "the floor at the last message",
  );
  // A message of another subject after the last one does not hold the floor back.
  await publish("other.thing"); // seq 5
  expect(await bus.ackFloor!(durable)).toBeGreaterThanOrEqual(4);
  await consumer.stop();

  // The consumer is lost: created again right after what its owner recorded (4). Before any
  // ack its server-side ack floor is 0; the bus reports the sequence it was created after (4),
  // then 5 once the server has looked past seq 5 (another subject's) for it.
  const nc = await connect({ servers: config.NATS_URL! });
  cleanups.push(() => nc.close());
  await (await nc.jetstreamManager()).consumers.delete(config.NATS_STREAM, durable);
  expect(await bus.ackFloor!(durable)).toBeUndefined();
  let hold: (() => void) | undefined;
  const again = await bus.consumeBatches!(
    { durable, subject: "contact.>", batchSize: 4, ackWaitMs: 5_000, startAfterSequence: async () => 4 },
    async (messages) => {
      await new Promise<void>((resolve) => (hold = resolve));
      handled.push(...messages.map((m) => m.streamSequence!));
    },
  );
  cleanups.push(() => again.stop());
  await waitFor(
    async () => ((await bus.ackFloor!(durable)) === 5 ? true : undefined),
    10_000,
    "the floor of the re-created consumer",
  );
  await publish("contact.created"); // seq 6, in hand
  await waitFor(() => hold, 10_000, "the new batch in hand");
  // In hand, nothing acked yet: what it was created after.
  expect(await bus.ackFloor!(durable)).toBe(4);
  hold!();
  await waitFor(
    async () => ((await bus.ackFloor!(durable)) === 6 ? true : undefined),
    10_000,
    "the floor after the new batch",
  );
  expect(handled).toEqual([1, 3, 4, 6]);
});
