// Reads back what a JetStream stream holds: the proof that an event was
// published once, and only once.
import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "nats";
import { ContactEventSchema, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";

export interface StoredEvent {
  subject: string;
  msgId: string;
  event: ContactEvent;
}

export async function readStream(natsUrl: string, stream: string): Promise<StoredEvent[]> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(stream);
    const out: StoredEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      out.push({
        subject: m.subject,
        msgId: m.header.get("Nats-Msg-Id"),
        event: fromBinary(ContactEventSchema, m.data),
      });
    }
    return out;
  } finally {
    await nc.close();
  }
}

export async function deleteStream(natsUrl: string, stream: string): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(stream).catch(() => undefined);
  } finally {
    await nc.close();
  }
}
