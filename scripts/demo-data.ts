// The demo a fresh start makes (an organisation, its member and an OAuth client, kept in DATA_DIR's
// DEMO_FILE), and the sign-in every later start prints while the demo member still has the demo password.
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import type { Config } from "../services/shared/config.js";
import { createRpcClient } from "../services/shared/rpc/client.js";

export const DEMO_FILE = "demo-credentials.json";

const rpc = (config: Config, baseUrl: string) => ({
  baseUrl,
  timeoutMs: config.RPC_TIMEOUT_MS,
  internalToken: config.internalToken,
});

/**
 * A fresh data folder (or an empty database) gets a demo organisation,
 * member and OAuth client, printed once and kept in DEMO_FILE.
 */
export async function createDemo(config: Config, dataDir: string, why: string): Promise<string> {
  const password = randomBytes(9).toString("base64url");
  const created = await createRpcClient(OrganisationService, rpc(config, config.organisationRpcUrl))
    .createOrganisation({ name: "Demo Organisation", ownerEmail: "demo@example.com", ownerPassword: password })
    .catch((err) => {
      // Its credentials file was removed, not the data: keep what exists.
      if (ConnectError.from(err).code === Code.AlreadyExists) return undefined;
      throw err;
    });
  if (!created) return "  demo data: exists already (demo@example.com); its credentials file was removed\n";
  const organisation = created.organisation!;
  const owner = created.owner!;
  const { client, clientSecret } = await createRpcClient(AuthService, rpc(config, config.authRpcUrl)).createClient({
    name: "Demo App",
    redirectUris: ["http://127.0.0.1:9876/callback"],
  });
  const file = path.join(dataDir, DEMO_FILE);
  const demo = {
    organisation: { id: organisation.id, name: organisation.name },
    member: { id: owner.id, email: owner.email, password },
    client: {
      client_id: client!.clientId,
      client_secret: clientSecret,
      redirect_uris: client!.redirectUris,
      scopes: client!.scopes,
    },
  };
  await writeFile(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  return [
    `  demo data (${why}):`,
    `    organisation   ${organisation.name} (${organisation.id})`,
    `    member login   ${owner.email} / ${password}`,
    `    OAuth client   client_id=${client!.clientId}`,
    `                   client_secret=${clientSecret}`,
    `                   redirect_uri=${client!.redirectUris[0]}`,
    `    (kept in ${file})`,
    "",
  ].join("\n");
}

/**
 * A later start's banner lines: the demo sign-in while the demo member's password is still the one
 * DEMO_FILE keeps, else where the file is; nothing without the file.
 */
export async function demoSignIn(config: Config, dataDir: string): Promise<string> {
  const file = path.join(dataDir, DEMO_FILE);
  const demo = await readFile(file, "utf8").then(
    (text) => JSON.parse(text) as { organisation: { name: string }; member: { email: string; password: string } },
    () => undefined,
  );
  if (!demo) return "";
  const { email, password } = demo.member;
  const still = await createRpcClient(OrganisationService, rpc(config, config.organisationRpcUrl))
    .verifyMemberCredentials({ email, password, remoteAddress: "" })
    .then(
      () => true,
      () => false,
    );
  if (!still) return `  demo credentials: ${file} (the demo member's password has been changed)\n`;
  return `  demo sign-in: ${email} / ${password} (${demo.organisation.name})\n  demo credentials: ${file}\n`;
}
