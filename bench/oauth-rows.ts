// The OAuth group of the benchmark (bench/run.ts): its cases (the token
// endpoint and introspection against the peer's, GET /oauth/me against bare
// node:http; with a second platform, the same on it, for the growth rows), and
// its table with the floors (issue 16).
import { httpCase, type Case } from "./cases.js";
import type { PeerTarget, PlatformTarget } from "./oauth-target.js";
import { median } from "./stats.js";

interface Row {
  group: string;
  name: string;
  rps: number;
  latency: number;
  /** Each round's calls/s, in the order run. */
  rounds: number[];
  /** Each round's share of the machine's time stolen by the hypervisor, percent (cpu-steal.ts). */
  stolen?: (number | undefined)[];
}

const PEER_TOKEN = "peer: oidc-provider POST /token, client_credentials (in memory)";
const PEER_INTROSPECTION = "peer: oidc-provider POST /token/introspection (in memory)";
const TOKEN = "gateway POST /oauth/token, client_credentials (PostgreSQL)";
const INTROSPECTION = "gateway POST /oauth/introspect, an active token (PostgreSQL)";
const ME = "gateway GET /oauth/me, Bearer token";
/** The growth rows' cases: the same, on the platform with its tables grown. */
const GROWN = ", 1,000,000 access tokens stored";
/** Each gateway row's counterpart at the peer (the "vs peer" column). */
const PEER_OF: Record<string, string> = { [TOKEN]: PEER_TOKEN, [INTROSPECTION]: PEER_INTROSPECTION };

const form = { "content-type": "application/x-www-form-urlencoded" };
const body = (params: Record<string, string>) => new URLSearchParams(params).toString();

/**
 * The OAuth cases, autocannon with 10 connections each. Both servers
 * authenticate the client the same way (client_secret_post); introspection
 * asks each about an active token of its own (RFC 7662: the platform reads it
 * from PostgreSQL every time, as a revocation must show at once).
 */
export function oauthCases(peer: PeerTarget, platform: PlatformTarget, seconds: number, grown?: PlatformTarget): Case[] {
  const peerClient = { client_id: peer.clientId, client_secret: peer.clientSecret };
  const post = (name: string, url: string, params: Record<string, string>, group: Case["group"] = "oauth") =>
    httpCase(name, { url, method: "POST", headers: form, body: body(params), expectStatus: 200 }, seconds, group);
  // The platform's cases; with `grown`, each followed by the same case on it (the growth rows).
  const ours = (name: string, make: (p: PlatformTarget, name: string, group: Case["group"]) => Case) =>
    grown ? [make(platform, name, "oauth"), make(grown, `${name}${GROWN}`, "growth")] : [make(platform, name, "oauth")];
  const client = (p: PlatformTarget) => ({ client_id: p.clientId, client_secret: p.clientSecret });
  return [
    post(PEER_TOKEN, `${peer.url}/token`, { grant_type: "client_credentials", ...peerClient, scope: "api:read" }),
    ...ours(TOKEN, (p, name, group) => post(name, `${p.gateway}/oauth/token`, { grant_type: "client_credentials", ...client(p), scope: "organisation:read" }, group)),
    post(PEER_INTROSPECTION, `${peer.url}/token/introspection`, { ...peerClient, token: peer.accessToken }),
    ...ours(INTROSPECTION, (p, name, group) => post(name, `${p.gateway}/oauth/introspect`, { ...client(p), token: p.accessToken }, group)),
    ...ours(ME, (p, name, group) =>
      httpCase(name, { url: `${p.gateway}/oauth/me`, headers: { authorization: `Bearer ${p.accessToken}` }, expectStatus: 200 }, seconds, group),
    ),
  ];
}

/** Each growth case's rounds beside its case's on the rows' platform (growth-rows.ts oauthGrowth). */
export function oauthGrowthPairs(rows: Row[]): { name: string; before: number[]; after: number[] }[] {
  return rows
    .filter((r) => r.group === "growth")
    .map((r) => {
      const name = r.name.slice(0, -GROWN.length);
      return { name, before: rows.find((b) => b.group === "oauth" && b.name === name)!.rounds, after: r.rounds };
    });
}

const num = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * `row` against `other` (the peer's case, or the bare row), round by round:
 * the median of the rounds' ratios, each of two cases measured in the same
 * round, seconds apart, as the growth rows pair theirs (growth-rows.ts). The
 * ratio of the two medians (as until 2026-11-29) paired one round's case with
 * another round's peer: one run's rounds had the peer at 11,844, 10,131 and
 * 11,316 tokens/s, the platform at 9,711, 9,596 and 10,033; 0.82, 0.95 and
 * 0.89 a round, 0.858 as the ratio of the medians.
 */
export function pairedRatio(row: Row, other: Row): { ratio: number; rounds: number[] } {
  const rounds = row.rounds.map((rps, i) => rps / other.rounds[i]!);
  return { ratio: median(rounds), rounds };
}

/** `rows`: every row of the run (the first is bare node:http). The floors' ratios are returned for the results file. */
export function printOauthRows(rows: Row[]): { token: number; me: number; introspection?: number } {
  const bare = rows[0]!;
  const byName = (name: string) => rows.find((r) => r.group === "oauth" && r.name === name);
  const vsPeer = (r: Row) => {
    const peer = PEER_OF[r.name] ? byName(PEER_OF[r.name]!) : undefined;
    return peer ? pairedRatio(r, peer) : undefined;
  };
  console.log(`\n${"OAuth, 10 connections (autocannon); ratios: median of the rounds'".padEnd(72)} ${"calls/s".padStart(9)} ${"p99 ms".padStart(9)} ${"vs bare".padStart(8)} ${"vs peer".padStart(8)}`);
  for (const r of [bare, ...rows.filter((r) => r.group === "oauth")]) {
    const ratio = vsPeer(r)?.ratio;
    console.log(
      `${r.name.padEnd(72)} ${num(r.rps).padStart(9)} ${num(r.latency).padStart(9)} ${pairedRatio(r, bare).ratio.toFixed(3).padStart(8)} ${(ratio === undefined ? "" : ratio.toFixed(3)).padStart(8)}`,
    );
  }
  // The OAuth floors (issue 16): the token endpoint >= 0.85x the peer, GET /oauth/me >= 0.4x bare.
  // Introspection has no floor of its own: its ratio is printed beside them.
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const each = (p: { rounds: number[] }) => `rounds ${p.rounds.map((x) => x.toFixed(3)).join(" / ")}`;
  // What the hypervisor took in each round, this row's and its counterpart's: a round far from the others often had much more.
  const stolen = (r: Row, other: Row) => {
    const side = (x: Row) => (x.stolen ?? []).map((s) => (s === undefined ? "?" : s.toFixed(0))).join("/");
    return r.stolen?.some((s) => s !== undefined) ? `; CPU stolen % ${side(r)} against ${side(other)}` : "";
  };
  const token = vsPeer(byName(TOKEN)!)!;
  const me = pairedRatio(byName(ME)!, bare);
  const introspection = byName(INTROSPECTION) && vsPeer(byName(INTROSPECTION)!);
  console.log(
    `\nfloors, OAuth: token endpoint ${token.ratio.toFixed(3)}x the peer (${each(token)}${stolen(byName(TOKEN)!, byName(PEER_TOKEN)!)}; >= 0.85: ${verdict(token.ratio >= 0.85)}); ` +
      `GET /oauth/me ${me.ratio.toFixed(3)}x bare (${each(me)}${stolen(byName(ME)!, bare)}; >= 0.4: ${verdict(me.ratio >= 0.4)})` +
      (introspection === undefined ? "" : `; introspection ${introspection.ratio.toFixed(3)}x the peer (${each(introspection)}; no floor)`),
  );
  return { token: token.ratio, me: me.ratio, introspection: introspection?.ratio };
}
