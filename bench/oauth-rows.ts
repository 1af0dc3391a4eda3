// The OAuth group of the benchmark (bench/run.ts): its cases (the token
// endpoint and introspection against both peers', oidc-provider in memory and
// on PostgreSQL, GET /oauth/me against bare node:http; with a second platform,
// the same on it, for the growth rows), and its table with the floors.
import { httpCase, type Case } from "./cases.js";
import type { Peers, PeerTarget, PlatformTarget } from "./oauth-target.js";
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
const DURABLE_TOKEN = "peer: oidc-provider POST /token, client_credentials (PostgreSQL)";
const DURABLE_INTROSPECTION = "peer: oidc-provider POST /token/introspection (PostgreSQL)";
const TOKEN = "gateway POST /oauth/token, client_credentials (PostgreSQL)";
const INTROSPECTION = "gateway POST /oauth/introspect, an active token (PostgreSQL)";
const ME = "gateway GET /oauth/me, Bearer token";
/** The growth rows' cases: the same, on the platform with its tables grown. */
const GROWN = ", 1,000,000 access tokens stored";
/** Each gateway row's counterpart at the in-memory peer (the "vs peer" column). */
const PEER_OF: Record<string, string> = { [TOKEN]: PEER_TOKEN, [INTROSPECTION]: PEER_INTROSPECTION };
/** Each gateway row's counterpart at the durable peer (the "vs durable" column). */
const DURABLE_OF: Record<string, string> = { [TOKEN]: DURABLE_TOKEN, [INTROSPECTION]: DURABLE_INTROSPECTION };

const form = { "content-type": "application/x-www-form-urlencoded" };
const body = (params: Record<string, string>) => new URLSearchParams(params).toString();

/**
 * The OAuth cases, autocannon with 10 connections each. Every server
 * authenticates the client the same way (client_secret_post); introspection
 * asks each about an active token of its own (RFC 7662: the platform and the
 * durable peer read it from PostgreSQL every time, as a revocation must show
 * at once). Each peer case takes its turn just before the platform's, every
 * round.
 */
export function oauthCases(peers: Peers, platform: PlatformTarget, seconds: number, grown?: PlatformTarget): Case[] {
  const peerClient = (p: PeerTarget) => ({ client_id: p.clientId, client_secret: p.clientSecret });
  const post = (name: string, url: string, params: Record<string, string>, group: Case["group"] = "oauth") =>
    httpCase(name, { url, method: "POST", headers: form, body: body(params), expectStatus: 200 }, seconds, group);
  const peerToken = (name: string, p: PeerTarget) =>
    post(name, `${p.url}/token`, { grant_type: "client_credentials", ...peerClient(p), scope: "api:read" });
  const peerIntrospection = (name: string, p: PeerTarget) =>
    post(name, `${p.url}/token/introspection`, { ...peerClient(p), token: p.accessToken });
  // The platform's cases; with `grown`, each followed by the same case on it (the growth rows).
  const ours = (name: string, make: (p: PlatformTarget, name: string, group: Case["group"]) => Case) =>
    grown ? [make(platform, name, "oauth"), make(grown, `${name}${GROWN}`, "growth")] : [make(platform, name, "oauth")];
  const client = (p: PlatformTarget) => ({ client_id: p.clientId, client_secret: p.clientSecret });
  return [
    peerToken(PEER_TOKEN, peers.memory),
    peerToken(DURABLE_TOKEN, peers.durable),
    ...ours(TOKEN, (p, name, group) =>
      post(
        name,
        `${p.gateway}/oauth/token`,
        { grant_type: "client_credentials", ...client(p), scope: "organisation:read" },
        group,
      ),
    ),
    peerIntrospection(PEER_INTROSPECTION, peers.memory),
    peerIntrospection(DURABLE_INTROSPECTION, peers.durable),
    ...ours(INTROSPECTION, (p, name, group) =>
      post(name, `${p.gateway}/oauth/introspect`, { ...client(p), token: p.accessToken }, group),
    ),
    ...ours(ME, (p, name, group) =>
      httpCase(
        name,
        { url: `${p.gateway}/oauth/me`, headers: { authorization: `Bearer ${p.accessToken}` }, expectStatus: 200 },
        seconds,
        group,
      ),
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

const num = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

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

/** For the results file: the floors' ratios (against the in-memory peer, the durable peer, bare node:http), and the durable peer's storage check. */
export interface OauthFloors {
  token: number;
  tokenDurable: number;
  me: number;
  introspection?: number;
  introspectionDurable?: number;
  durablePeerStorage: DurablePeerStorage;
}

/**
 * `rows`: every row of the run (the first is bare node:http); `stored`: the
 * durable peer's ClientCredentials rows after the rounds; `seconds`: a round's.
 */
export function printOauthRows(rows: Row[], stored: number, seconds: number): OauthFloors {
  const bare = rows[0]!;
  const byName = (name: string) => rows.find((r) => r.group === "oauth" && r.name === name);
  const against = (of: Record<string, string>) => (r: Row) => {
    const other = of[r.name] ? byName(of[r.name]!) : undefined;
    return other ? pairedRatio(r, other) : undefined;
  };
  const [vsPeer, vsDurable] = [against(PEER_OF), against(DURABLE_OF)];
  const ratioColumn = (p: { ratio: number } | undefined, width: number) =>
    (p === undefined ? "" : p.ratio.toFixed(3)).padStart(width);
  console.log(
    `\n${"OAuth, 10 connections (autocannon); ratios: median of the rounds'".padEnd(72)} ${"calls/s".padStart(9)} ${"p99 ms".padStart(9)} ${"vs bare".padStart(8)} ${"vs peer".padStart(8)} ${"vs durable".padStart(10)}`,
  );
  for (const r of [bare, ...rows.filter((r) => r.group === "oauth")]) {
    console.log(
      `${r.name.padEnd(72)} ${num(r.rps).padStart(9)} ${num(r.latency).padStart(9)} ${pairedRatio(r, bare).ratio.toFixed(3).padStart(8)} ${ratioColumn(vsPeer(r), 8)} ${ratioColumn(vsDurable(r), 10)}`,
    );
  }
  // The OAuth floors: the token endpoint >= 0.85x the in-memory peer and >= 1.0x the durable
  // peer (which commits every token before answering, as the platform does), GET /oauth/me
  // >= 0.4x bare. Introspection has no floor of its own: its ratios are printed beside them.
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const each = (p: { rounds: number[] }) => `rounds ${p.rounds.map((x) => x.toFixed(3)).join(" / ")}`;
  // What the hypervisor took in each round, this row's and its counterpart's: a round far from the others often had much more.
  const stolen = (r: Row, other: Row) => {
    const side = (x: Row) => (x.stolen ?? []).map((s) => (s === undefined ? "?" : s.toFixed(0))).join("/");
    return r.stolen?.some((s) => s !== undefined) ? `; CPU stolen % ${side(r)} against ${side(other)}` : "";
  };
  const tokenRow = byName(TOKEN)!;
  const token = vsPeer(tokenRow)!;
  const tokenDurable = vsDurable(tokenRow)!;
  const me = pairedRatio(byName(ME)!, bare);
  const introspectionRow = byName(INTROSPECTION);
  const introspection = introspectionRow && vsPeer(introspectionRow);
  const introspectionDurable = introspectionRow && vsDurable(introspectionRow);
  console.log(
    `\nfloors, OAuth: token endpoint ${token.ratio.toFixed(3)}x the in-memory peer (${each(token)}${stolen(tokenRow, byName(PEER_TOKEN)!)}; >= 0.85: ${verdict(token.ratio >= 0.85)}); ` +
      `token endpoint ${tokenDurable.ratio.toFixed(3)}x the durable peer (${each(tokenDurable)}${stolen(tokenRow, byName(DURABLE_TOKEN)!)}; >= 1.0: ${verdict(tokenDurable.ratio >= 1)}); ` +
      `GET /oauth/me ${me.ratio.toFixed(3)}x bare (${each(me)}${stolen(byName(ME)!, bare)}; >= 0.4: ${verdict(me.ratio >= 0.4)})` +
      (introspection === undefined
        ? ""
        : `; introspection ${introspection.ratio.toFixed(3)}x the in-memory peer (${each(introspection)}; no floor)`) +
      (introspectionDurable === undefined
        ? ""
        : `; introspection ${introspectionDurable.ratio.toFixed(3)}x the durable peer (${each(introspectionDurable)}; no floor)`),
  );
  const durablePeerStorage = printDurablePeerStorage(rows, stored, seconds);
  return {
    token: token.ratio,
    tokenDurable: tokenDurable.ratio,
    me: me.ratio,
    introspection: introspection?.ratio,
    introspectionDurable: introspectionDurable?.ratio,
    durablePeerStorage,
  };
}

interface DurablePeerStorage {
  stored: number;
  answered: number;
  everyTokenStored: boolean;
}

/**
 * That the durable peer committed every token it answered: its adapter's
 * ClientCredentials rows after the rounds (`stored`) against the tokens its
 * token row's measured rounds answered (rounds' calls/s times `seconds`); the
 * warm-up's and the set-up's tokens are stored too, so `stored` is the larger.
 */
function printDurablePeerStorage(rows: Row[], stored: number, seconds: number): DurablePeerStorage {
  const row = rows.find((r) => r.group === "oauth" && r.name === DURABLE_TOKEN)!;
  const answered = Math.round(row.rounds.reduce((a, b) => a + b, 0) * seconds);
  const everyTokenStored = stored >= answered;
  console.log(
    `\ndurable peer: ${num(stored)} ClientCredentials rows in its PostgreSQL after the rounds, against about ${num(answered)} tokens answered in its measured rounds ` +
      `(every token stored: ${everyTokenStored ? "yes" : "NO"})`,
  );
  return { stored, answered, everyTokenStored };
}
