// `bizcard client …`: the auth service's client registry. create registers
// an operator's client; list shows every client (or only those the operator
// did not register: self-registered at POST /oauth/register, or known by a
// Client ID Metadata Document); delete removes one with its grants and
// tokens (the organisations' webhooks and cached bearer checks of it end).
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { ClientRegistration, type AuthService, type Client as ClientMessage } from "../gen/bizcard/auth/v1/auth_pb.js";

type Auth = Client<typeof AuthService>;
type Output = { json: unknown; text: string };

const REGISTRATION_NAMES: Record<ClientRegistration, string> = {
  [ClientRegistration.UNSPECIFIED]: "operator",
  [ClientRegistration.OPERATOR]: "operator",
  [ClientRegistration.DYNAMIC]: "dynamic",
  [ClientRegistration.METADATA_DOCUMENT]: "metadata_document",
};

export async function createClient(auth: Auth, values: Record<string, unknown>): Promise<Output> {
  const scope = typeof values.scope === "string" ? values.scope.split(/\s+/).filter(Boolean) : [];
  const res = await auth.createClient({
    name: values.name as string,
    redirectUris: (values["redirect-uri"] as string[] | undefined) ?? [],
    public: Boolean(values.public),
    ownerOrganisationId: (values["owner-org"] as string | undefined) ?? "",
    scopes: scope,
    grantTypes: (values["grant-type"] as string[] | undefined) ?? [],
  });
  const c = res.client!;
  const json = {
    client_id: c.clientId,
    ...(res.clientSecret ? { client_secret: res.clientSecret } : {}),
    name: c.name,
    redirect_uris: c.redirectUris,
    scopes: c.scopes,
  };
  const lines = [`client_id     ${json.client_id}`];
  if (res.clientSecret) lines.push(`client_secret ${res.clientSecret}   (shown once)`);
  lines.push(
    `name          ${c.name}`,
    `redirect_uris ${c.redirectUris.join(" ")}`,
    `scopes        ${c.scopes.join(" ")}`,
    `grant_types   ${c.grantTypes.join(" ")}`,
  );
  return { json, text: lines.join("\n") };
}

/** A client as `bizcard client list --json` prints it. */
function clientJson(c: ClientMessage) {
  return {
    client_id: c.clientId,
    name: c.name,
    registration: REGISTRATION_NAMES[c.registration] ?? "operator",
    created_at: c.createTime ? timestampDate(c.createTime).toISOString() : null,
    public: c.public,
    redirect_uris: c.redirectUris,
    grant_types: c.grantTypes,
  };
}

export async function listClients(auth: Auth, values: Record<string, unknown>): Promise<Output> {
  const { clients } = await auth.listClients({});
  const shown = values["self-registered"]
    ? clients.filter(
        (c) => c.registration === ClientRegistration.DYNAMIC || c.registration === ClientRegistration.METADATA_DOCUMENT,
      )
    : clients;
  const list = shown.map(clientJson);
  const width = Math.max(9, ...list.map((c) => c.client_id.length));
  const lines = list.map(
    (c) => `${c.client_id.padEnd(width)}  ${c.registration.padEnd(17)}  ${c.created_at ?? ""}  ${c.name}`,
  );
  const none = values["self-registered"] ? "no self-registered clients" : "no clients";
  return {
    json: { clients: list },
    text: lines.length
      ? [`${"CLIENT_ID".padEnd(width)}  ${"REGISTRATION".padEnd(17)}  ${"CREATED".padEnd(24)}  NAME`, ...lines].join(
          "\n",
        )
      : none,
  };
}

export async function deleteClient(auth: Auth, clientId: string): Promise<Output> {
  await auth.deleteClient({ clientId });
  return {
    json: { client_id: clientId, deleted: true },
    text: `client ${clientId} deleted, with its grants and tokens`,
  };
}
