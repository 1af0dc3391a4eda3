// Fails, naming them, when a source file outside gen/ is over 350 lines: a
// file that long does two jobs (the developers' guide). Generated code is
// exempt; it is never read or edited by hand.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const LIMIT = 350;
const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "*.ts", "*.mjs", "*.js", "*.cjs"], {
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => f && !f.startsWith("gen/") && !f.includes("node_modules/"));
const long = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    continue; // listed but deleted in the work tree
  }
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  if (lines > LIMIT) long.push(`${file}: ${lines} lines`);
}
if (long.length > 0) {
  console.error(`source files over ${LIMIT} lines (split them by job):\n  ${long.join("\n  ")}`);
  process.exit(1);
}
console.log(`${files.length} source files, none over ${LIMIT} lines`);
