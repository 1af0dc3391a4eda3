// The one file that reaches into connect-es's protocol subpaths.
//
// `@connectrpc/connect/protocol` and `/protocol-connect` are public paths,
// but their exports are marked @private: connect may change them in any
// release. The lean unary server and client (lean-server.ts, client.ts,
// http1-transport.ts) take them from here only, so that a connect upgrade
// is checked against this file alone. Checked against connect 2.1.1: on any
// other installed version the process refuses to load until this file has
// been re-read against that version's sources and CHECKED_VERSION raised.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export {
  createUniversalHandlerClient,
  getAbortSignalReason,
  validateReadWriteMaxBytes,
  type UniversalClientFn,
  type UniversalClientResponse,
} from "@connectrpc/connect/protocol";
export {
  codeFromHttpStatus,
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  createTransport,
  errorFromJsonBytes,
  errorToJsonBytes,
  parseContentType,
  protocolVersion,
} from "@connectrpc/connect/protocol-connect";

/** The connect-es version every import above was checked against. */
export const CHECKED_VERSION = "2.1.1";

const require = createRequire(import.meta.url);

/** The version of an installed package, from its own package.json (which its exports map does not expose). */
export function installedVersion(name: string): string {
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) return pkg.version;
    } catch {
      // no package.json at this level: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package.json of ${name}`);
    dir = parent;
  }
}

/** The installed connect-es version (also what the client's user agent says). */
export const CONNECT_VERSION = installedVersion("@connectrpc/connect");

if (CONNECT_VERSION !== CHECKED_VERSION) {
  throw new Error(
    `services/shared/rpc/connect-internals.ts was checked against @connectrpc/connect ${CHECKED_VERSION}, ` +
      `but ${CONNECT_VERSION} is installed: re-check its imports of connect's @private protocol functions and update CHECKED_VERSION`,
  );
}
