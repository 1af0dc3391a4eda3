// The OAuth group's table (bench/run.ts): the token endpoint against the
// peer, GET /oauth/me against bare node:http, and their floors (issue 16).

interface Row {
  group: string;
  name: string;
  rps: number;
  latency: number;
}

const num = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** `rows`: every row of the run (the first is bare node:http); `base`: its calls/s. */
export function printOauthRows(rows: Row[], base: number): void {
  const peerRow = rows.find((r) => r.name.startsWith("peer: "))!;
  // In the OAuth group: the HTTP group has a refused POST /oauth/token of its own.
  const tokenRow = rows.find((r) => r.group === "oauth" && r.name.startsWith("gateway POST /oauth/token"))!;
  const meRow = rows.find((r) => r.group === "oauth" && r.name.startsWith("gateway GET /oauth/me"))!;
  console.log(`\n${"OAuth, 10 connections (autocannon)".padEnd(72)} ${"calls/s".padStart(9)} ${"p99 ms".padStart(9)} ${"vs bare".padStart(8)} ${"vs peer".padStart(8)}`);
  for (const r of [rows[0]!, ...rows.filter((r) => r.group === "oauth")]) {
    console.log(
      `${r.name.padEnd(72)} ${num(r.rps).padStart(9)} ${num(r.latency).padStart(9)} ${(r.rps / base).toFixed(3).padStart(8)} ${(r.rps / peerRow.rps).toFixed(3).padStart(8)}`,
    );
  }
  // The OAuth floors (issue 16): the token endpoint >= 0.85x the peer, GET /oauth/me >= 0.4x bare.
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  console.log(
    `\nfloors, OAuth: token endpoint ${(tokenRow.rps / peerRow.rps).toFixed(3)}x the peer (>= 0.85: ${verdict(tokenRow.rps / peerRow.rps >= 0.85)}); ` +
      `GET /oauth/me ${(meRow.rps / base).toFixed(3)}x bare (>= 0.4: ${verdict(meRow.rps / base >= 0.4)})`,
  );
}
