// bizcard: administration over RPC.
//   bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]
//   bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--scope "A B"] [--grant-type G…] [--json]
//   bizcard client create --name NAME --owner-org ID [--redirect-uri URI…] [--scope "A B"] [--grant-type G…] [--json]
//   bizcard client list [--self-registered] [--json]
//   bizcard client delete CLIENT_ID [--json]
//   bizcard contact create --org ID (--first-name F | --last-name L) [FIELD…] [--json]
//   bizcard contact update --org ID --id ID FIELD [FIELD…] [--json]
//   bizcard subscriptions rotate-secret ID --org ID --client CLIENT_ID [--json]
//   bizcard secrets reencrypt [--json]
//   bizcard deliveries failed [--org ID] [--limit N] [--json]
//   bizcard deliveries log --org ID --client CLIENT_ID --subscription ID [--limit N] [--json]
//   bizcard deliveries retry --org ID --client CLIENT_ID --subscription ID --id DELIVERY_ID [--json]
//   bizcard deliveries recover SUBSCRIPTION_ID --org ID --client CLIENT_ID --since TIME [--json]
//   bizcard --help
// Flags outside [brackets] are required. The organisation is always named
// explicitly (--org): the organisation service refuses contact calls without it.
// --help prints the usage on stdout and exits 0. A bad command or flag prints
// the usage on stderr and exits 2; an RPC failure prints one line on stderr and
// exits 1. With --json, the output is one JSON object and nothing else, errors
// included: {"error", "error_description"} on stdout, with the same exit status.
import { USAGE, UsageError, parse } from "./cli-commands.js";

const argv = process.argv.slice(2);
const json = argv.includes("--json");
if (argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
// A bad command line is answered before any client is loaded.
try {
  parse(argv);
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  if (json) process.stdout.write(`${JSON.stringify({ error: "invalid_usage", error_description: err.message })}\n`);
  else process.stderr.write(`bizcard: ${err.message}\n${err.usage}\n`);
  process.exit(2);
}
const { runCommand } = await import("./cli-run.js");
await runCommand(argv, json);
