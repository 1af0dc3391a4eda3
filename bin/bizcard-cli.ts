// bizcard: administration of the platform over the services' RPC ports with
// the internal credential. Its usage (cli-commands.ts) is answered at once:
// --help on stdout, exit 0; a bad command line on stderr, exit 2 (with --json,
// one JSON object on stdout), before any client is loaded.
import { USAGE, UsageError, parse } from "./cli-commands.js";

const argv = process.argv.slice(2);
const json = argv.includes("--json");
if (argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
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
