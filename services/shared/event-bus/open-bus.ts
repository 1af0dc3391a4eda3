// The bus a process opens: NATS JetStream when NATS_URL is set; otherwise the
// in-process bus, and the NATS client is never loaded.
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { EventBus } from "./event-bus.js";
import { InProcessBus } from "./in-process-bus.js";

export async function openBus(config: Config, name: string, logger: Logger): Promise<EventBus> {
  if (!config.NATS_URL) return new InProcessBus(config.NATS_SUBJECT_PREFIX, logger);
  const { NatsBus } = await import("./nats-bus.js");
  return NatsBus.connect({
    servers: config.NATS_URL,
    stream: config.NATS_STREAM,
    prefix: config.NATS_SUBJECT_PREFIX,
    replicas: config.NATS_STREAM_REPLICAS,
    duplicateWindowSeconds: config.NATS_DUPLICATE_WINDOW_SECONDS,
    publishTimeoutMs: config.OUTBOX_PUBLISH_TIMEOUT_MS,
    name,
    logger,
  });
}
