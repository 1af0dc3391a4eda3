// The bizcard command's work: each command's calls and what they print, and
// how a failure is told. Loaded by bizcard-cli.ts once a command line has parsed.
import { Code, ConnectError } from "@connectrpc/connect";
import { UsageError, parse, serviceOf, type CommandRun } from "./cli-commands.js";
import { explainFailure, serviceClients } from "./cli-connection.js";
import { CLIENT_COMMANDS } from "./client-commands.js";
import { DELIVERY_COMMANDS } from "./deliveries-commands.js";
import { ORG_COMMANDS } from "./org-commands.js";
import { WEBHOOK_COMMANDS } from "./webhook-commands.js";

const RUNS: Record<string, CommandRun> = {
  ...ORG_COMMANDS,
  ...CLIENT_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...DELIVERY_COMMANDS,
};

/** snake_case name of a Connect code: "not_found", "invalid_argument", … */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function fail(json: boolean, status: 1 | 2, error: string, description: string, text: string): never {
  if (json) process.stdout.write(`${JSON.stringify({ error, error_description: description })}\n`);
  else process.stderr.write(text);
  process.exit(status);
}

/** Runs the command line; prints its answer, or its failure and exits 1 (2 for a usage error). */
export async function runCommand(argv: string[], json: boolean): Promise<void> {
  try {
    const { command, values, positionals } = parse(argv);
    const result = await RUNS[command]!(serviceClients(), values, positionals);
    process.stdout.write(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
  } catch (err) {
    if (err instanceof UsageError)
      fail(json, 2, "invalid_usage", err.message, `bizcard: ${err.message}\n${err.usage}\n`);
    const e = ConnectError.from(err);
    const message = explainFailure(e, serviceOf(argv));
    fail(json, 1, codeName(e.code), message, `bizcard: ${message} (${codeName(e.code)})\n`);
  }
}
