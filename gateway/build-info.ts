// What /healthz reports about the running code: the package's version and,
// where known, the git commit: GIT_COMMIT when the deployment sets it, else
// read from the checkout's .git (never by running git). Read once at start.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

interface BuildInfo {
  version: string;
  commit?: string;
}

const PACKAGE_NAME = "bizcard-oauth-platform";

/** The folder holding this platform's package.json (the checkout, or /app in the image) and its version. */
function packageRoot(from: string): { root: string; version?: string } | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    const found = existsSync(file) && (JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string });
    if (found && found.name === PACKAGE_NAME) return { root: dir, version: found.version };
    if (path.dirname(dir) === dir) return undefined;
  }
}

const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim() : undefined);

/** HEAD's commit from .git (a folder, or a worktree's file pointing at one), without git. */
function gitCommit(root: string): string | undefined {
  const dotGit = path.join(root, ".git");
  if (!existsSync(dotGit)) return undefined;
  const gitDir = statSync(dotGit).isDirectory() ? dotGit : path.resolve(root, read(dotGit)!.replace(/^gitdir:\s*/, ""));
  const commonDir = existsSync(path.join(gitDir, "commondir"))
    ? path.resolve(gitDir, read(path.join(gitDir, "commondir"))!)
    : gitDir;
  const head = read(path.join(gitDir, "HEAD"));
  if (!head) return undefined;
  if (!head.startsWith("ref:")) return head;
  const ref = head.slice(4).trim();
  const loose = read(path.join(gitDir, ref)) ?? read(path.join(commonDir, ref));
  if (loose) return loose;
  const packed = read(path.join(commonDir, "packed-refs"));
  return packed
    ?.split("\n")
    .find((l) => l.endsWith(` ${ref}`))
    ?.split(" ")[0];
}

export function readBuildInfo(env: NodeJS.ProcessEnv = process.env, from = import.meta.dirname): BuildInfo {
  const found = packageRoot(from);
  const root = found?.root;
  const version = found?.version ?? "unknown";
  let commit = env.GIT_COMMIT?.trim() || undefined;
  if (!commit && root) {
    try {
      commit = gitCommit(root);
    } catch {
      commit = undefined; // an unreadable .git: the version alone
    }
  }
  return commit && /^[0-9a-f]{7,64}$/i.test(commit) ? { version, commit } : { version };
}
