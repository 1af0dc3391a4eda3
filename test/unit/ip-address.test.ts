// The IP classification behind both webhook destination checks (save time
// and connect time): every range of the table, its edges, and the IPv4
// destinations hidden in IPv6. Pure: no database, no network.
import { describe, expect, it } from "vitest";
import {
  IP_CLASS_LABELS,
  classifyIp,
  ipRefusal,
  isPublicIp,
  type IpClass,
} from "../../services/shared/net/ip-address.js";

const table: [address: string, kind: IpClass][] = [
  // IPv4: the first and last address of each range, and the public neighbours.
  ["0.0.0.0", "unspecified"],
  ["0.255.255.255", "unspecified"],
  ["1.0.0.0", "public"],
  ["9.255.255.255", "public"],
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["11.0.0.0", "public"],
  ["100.63.255.255", "public"],
  ["100.64.0.0", "shared"],
  ["100.127.255.255", "shared"],
  ["100.128.0.0", "public"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.255", "loopback"],
  ["169.254.0.0", "link-local"],
  ["169.254.169.254", "link-local"],
  ["169.255.0.0", "public"],
  ["172.15.255.255", "public"],
  ["172.16.0.0", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.0", "public"],
  ["192.0.0.8", "reserved"],
  ["192.0.2.1", "documentation"],
  ["192.88.99.1", "reserved"],
  ["192.168.0.0", "private"],
  ["192.168.255.255", "private"],
  ["198.17.255.255", "public"],
  ["198.18.0.0", "reserved"],
  ["198.19.255.255", "reserved"],
  ["198.20.0.0", "public"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.9", "documentation"],
  ["223.255.255.255", "public"],
  ["224.0.0.0", "multicast"],
  ["239.255.255.255", "multicast"],
  ["240.0.0.0", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["8.8.8.8", "public"],
  // IPv6.
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["::2", "reserved"],
  ["::127.0.0.1", "reserved"], // IPv4-compatible, deprecated
  ["::ffff:127.0.0.1", "ipv4-mapped"],
  ["::ffff:7f00:1", "ipv4-mapped"],
  ["::ffff:8.8.8.8", "ipv4-mapped"],
  ["64:ff9b:1::1", "reserved"], // local-use NAT64
  ["100::1", "reserved"], // discard-only
  ["100::1:0:0:0:1", "reserved"],
  ["2001::1", "reserved"], // Teredo
  ["2001:1ff:ffff::1", "reserved"], // IETF protocol assignments end
  ["2001:200::1", "public"],
  ["2001:db8::1", "documentation"],
  ["2001:db8:ffff::1", "documentation"],
  ["3fff::1", "documentation"],
  ["3fff:fff::1", "documentation"],
  ["3fff:1000::1", "public"],
  ["2606:4700:4700::1111", "public"],
  ["[2001:4860:4860::8888]", "public"],
  ["1fff::1", "reserved"], // below 2000::/3
  ["4000::1", "reserved"], // above it
  ["fc00::1", "unique-local"],
  ["fdff:ffff::1", "unique-local"],
  ["fe80::1", "link-local"],
  ["febf:ffff::1", "link-local"],
  ["fec0::1", "reserved"], // site-local, deprecated
  ["ff02::1", "multicast"],
  ["[::1]", "loopback"],
  // Zone ids: a scoped address is never global.
  ["fe80::1%eth0", "link-local"],
  ["2606:4700::1%eth0", "link-local"],
  ["::1%lo", "loopback"],
  // NAT64 and 6to4 are judged by the IPv4 address they carry.
  ["64:ff9b::7f00:1", "loopback"],
  ["64:ff9b::10.0.0.1", "private"],
  ["64:ff9b::a9fe:a9fe", "link-local"],
  ["64:ff9b::8.8.8.8", "public"],
  ["2002:a00:1::1", "private"], // 6to4 of 10.0.0.1
  ["2002:7f00:1::", "loopback"],
  ["2002:c0a8:101::1", "private"],
  ["2002:808:808::1", "public"],
  // Not addresses, or not in the form an answer or a normalised URL holds.
  ["example.com", "invalid"],
  ["1.2.3.256", "invalid"],
  ["127.1", "invalid"],
  ["0x7f.0.0.1", "invalid"],
  ["", "invalid"],
  ["::g", "invalid"],
  ["1:2:3:4:5:6:7:8:9", "invalid"],
  ["%eth0", "invalid"],
];

describe("classifyIp", () => {
  it.each(table)("%s is %s", (address, kind) => {
    expect(classifyIp(address)).toBe(kind);
  });

  it("public means public, and nothing else is", () => {
    for (const [address, kind] of table) expect(isPublicIp(address)).toBe(kind === "public");
  });

  it("says why an address is refused, in the labels' words", () => {
    expect(ipRefusal("8.8.8.8")).toBeUndefined();
    expect(ipRefusal("127.0.0.1")).toBe("127.0.0.1 is a loopback address");
    expect(ipRefusal("100.64.0.1")).toBe(`100.64.0.1 is a ${IP_CLASS_LABELS.shared} address`);
    expect(ipRefusal("::ffff:8.8.8.8")).toBe("::ffff:8.8.8.8 is a IPv4-mapped IPv6 address");
  });
});
