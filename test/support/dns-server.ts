// A DNS server on a loopback UDP port for tests, so that the webhook
// service's real c-ares resolver (WEBHOOK_DNS_SERVERS) answers what a test
// needs: A and AAAA records, NXDOMAIN, SERVFAIL, or silence (a name whose DNS
// never answers). RFC 1035 §4.1, just enough for one question per query.
import dgram from "node:dgram";
import { isIPv4 } from "node:net";

export type DnsAnswer = { A?: string[]; AAAA?: string[] } | "nxdomain" | "servfail" | "drop";

const TYPE_A = 1;
const TYPE_AAAA = 28;

function ipv6Bytes(text: string): Buffer {
  const [left, right] = text.includes("::") ? text.split("::") : [text, undefined];
  const l = left ? left.split(":") : [];
  const r = right === undefined ? [] : right ? right.split(":") : [];
  const groups = right === undefined ? l : [...l, ...Array<string>(8 - l.length - r.length).fill("0"), ...r];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g || "0", 16), i * 2));
  return out;
}

function ipv4Bytes(text: string): Buffer {
  return Buffer.from(text.split(".").map(Number));
}

/** The name and type of the query's one question, and where the question ends. */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let i = 12;
  while (msg[i]! !== 0) {
    const len = msg[i]!;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString("ascii"));
    i += len + 1;
  }
  i += 1;
  return { name: labels.join(".").toLowerCase(), type: msg.readUInt16BE(i), end: i + 4 };
}

export class TestDnsServer {
  /** Every question asked, "name/type". */
  readonly asked: string[] = [];

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly zone: Record<string, DnsAnswer>,
  ) {
    socket.on("message", (msg, peer) => this.answer(msg, peer));
  }

  static async start(zone: Record<string, DnsAnswer>): Promise<TestDnsServer> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    return new TestDnsServer(socket, zone);
  }

  /** For WEBHOOK_DNS_SERVERS: "127.0.0.1:<port>". */
  get address(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(msg: Buffer, peer: dgram.RemoteInfo): void {
    const q = readQuestion(msg);
    this.asked.push(`${q.name}/${q.type === TYPE_A ? "A" : q.type === TYPE_AAAA ? "AAAA" : q.type}`);
    const entry = this.zone[q.name] ?? "nxdomain";
    if (entry === "drop") return;
    const rcode = entry === "nxdomain" ? 3 : entry === "servfail" ? 2 : 0;
    const records =
      typeof entry === "object"
        ? q.type === TYPE_A
          ? (entry.A ?? []).filter((a) => isIPv4(a)).map(ipv4Bytes)
          : q.type === TYPE_AAAA
            ? (entry.AAAA ?? []).map(ipv6Bytes)
            : []
        : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | rcode, 2); // QR, RD copied, RA, rcode
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answers = records.map((rdata) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(q.type, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    this.socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), peer.port, peer.address);
  }
}
