// `bizcard client …`: the auth service's client registry. create registers an
// operator's client; list shows every client (or only the self-registered
// ones: POST /oauth/register, or a Client ID Metadata Document); delete removes
// one with its grants and tokens (its webhooks and cached bearer checks end).
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ClientRegistration } from "../gen/bizcard/auth/v1/auth_pb.js";
import { table, type CommandRun } from "./cli-commands.js";

const REGISTRATION_NAMES: Record<ClientRegistration, string> = {
  [ClientRegistration.UNSPECIFIED]: "operator",
  [ClientRegistration.OPERATOR]: "operator",
  [ClientRegistration.DYNAMIC]: "dynamic",
  [ClientRegistration.METADATA_DOCUMENT]: "metadata_document",
};

export const CLIENT_COMMANDS: Record<string, CommandRun> = {
  async "client create"({ auth }, values) {
    const res = await auth.createClient({
      name: values.name as string,
      redirectUris: (values["redirect-uri"] as string[] | undefined) ?? [],
      public: Boolean(values.public),
      ownerOrganisationId: (values["owner-org"] as string | undefined) ?? "",
      scopes: typeof values.scope === "string" ? values.scope.split(/\s+/).filter(Boolean) : [],
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
  },

  async "client list"({ auth }, values) {
    const selfRegistered = [ClientRegistration.DYNAMIC, ClientRegistration.METADATA_DOCUMENT];
    const { clients } = await auth.listClients({});
    const list = clients
      .filter((c) => !values["self-registered"] || selfRegistered.includes(c.registration))
      .map((c) => ({
        client_id: c.clientId,
        name: c.name,
        registration: REGISTRATION_NAMES[c.registration] ?? "operator",
        created_at: c.createTime ? timestampDate(c.createTime).toISOString() : null,
        public: c.public,
        redirect_uris: c.redirectUris,
        grant_types: c.grantTypes,
      }));
    const widths = [Math.max(9, ...list.map((c) => c.client_id.length)), 17, 24];
    const rows = list.map((c) => [c.client_id, c.registration, c.created_at ?? "", c.name]);
    const none = values["self-registered"] ? "no self-registered clients" : "no clients";
    return {
      json: { clients: list },
      text: table(["CLIENT_ID", "REGISTRATION", "CREATED", "NAME"], widths, rows, none),
    };
  },

  async "client delete"({ auth }, _values, [clientId]) {
    await auth.deleteClient({ clientId: clientId! });
    return {
      json: { client_id: clientId, deleted: true },
      text: `client ${clientId} deleted, with its grants and tokens`,
    };
  },
};
