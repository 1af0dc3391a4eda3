// The OAuth group of the benchmark (bench/run.ts): its cases (the token
// endpoint and introspection against the peer's, GET /oauth/me against bare
// node:http; with a second platform, the same on it, for the growth rows), and
// its table with the floors (issue 16).
import { httpCase, type Case } from "./cases.js";
import type { PeerTarget, PlatformTarget } from "./oauth-target.js";

interface Row {
  group: string;
  name: string;
  rps: number;
  latency: number;
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
export function oauthGrowthPairs(rows: (Row & { rounds: number[] })[]): { name: string; before: number[]; after: number[] }[] {
  return rows
    .filter((r) => r.group === "growth")
    .map((r) => {
      const name = r.name.slice(0, -GROWN.length);
      return { name, before: rows.find((b) => b.group === "oauth" && b.name === name)!.rounds, after: r.rounds };
    });
}

const num = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** `rows`: every row of the run (the first is bare node:http); `base`: its calls/s. */
export function printOauthRows(rows: Row[], base: number): void {
  const byName = (name: string) => rows.find((r) => r.group === "oauth" && r.name === name);
  const vsPeer = (r: Row) => {
    const peer = PEER_OF[r.name] ? byName(PEER_OF[r.name]!) : undefined;
    return peer ? r.rps / peer.rps : undefined;
  };
  console.log(`\n${"OAuth, 10 connections (autocannon)".padEnd(72)} ${"calls/s".padStart(9)} ${"p99 ms".padStart(9)} ${"vs bare".padStart(8)} ${"vs peer".padStart(8)}`);
  for (const r of [rows[0]!, ...rows.filter((r) => r.group === "oauth")]) {
    const ratio = vsPeer(r);
    console.log(
      `${r.name.padEnd(72)} ${num(r.rps).padStart(9)} ${num(r.latency).padStart(9)} ${(r.rps / base).toFixed(3).padStart(8)} ${(ratio === undefined ? "" : ratio.toFixed(3)).padStart(8)}`,
    );
  }
  // The OAuth floors (issue 16): the token endpoint >= 0.85x the peer, GET /oauth/me >= 0.4x bare.
  // Introspection has no floor of its own: its ratio is printed beside them.
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const token = vsPeer(byName(TOKEN)!)!;
  const me = byName(ME)!.rps / base;
  const introspection = byName(INTROSPECTION) && vsPeer(byName(INTROSPECTION)!);
  console.log(
    `\nfloors, OAuth: token endpoint ${token.toFixed(3)}x the peer (>= 0.85: ${verdict(token >= 0.85)}); ` +
      `GET /oauth/me ${me.toFixed(3)}x bare (>= 0.4: ${verdict(me >= 0.4)})` +
      (introspection === undefined ? "" : `; introspection ${introspection.toFixed(3)}x the peer (no floor)`),
  );
}
