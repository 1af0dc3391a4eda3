// `bizcard org …` and `bizcard contact …`: the organisation service. org create
// makes an organisation with its first member; org list shows every one, newest
// first, so that an operator who lost an organisation's id finds it by name.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Contact, Organisation } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { contactJson } from "../services/shared/contact-json.js";
import { contactFields, table, type CommandRun } from "./cli-commands.js";

export const ORG_COMMANDS: Record<string, CommandRun> = {
  async "org create"({ organisations }, values) {
    const res = await organisations.createOrganisation({
      name: values.name as string,
      ownerEmail: values.email as string,
      ownerPassword: values.password as string,
    });
    const json = {
      organisation: { id: res.organisation!.id, name: res.organisation!.name },
      user: { id: res.owner!.id, email: res.owner!.email },
    };
    return {
      json,
      text: `organisation ${json.organisation.id} "${json.organisation.name}"\nuser ${json.user.id} ${json.user.email}`,
    };
  },

  async "org list"({ organisations }) {
    const all: Organisation[] = [];
    let pageToken = "";
    do {
      const res = await organisations.listOrganisations({ pageSize: 100, pageToken });
      all.push(...res.organisations);
      pageToken = res.nextPageToken;
    } while (pageToken);
    const list = all.map((o) => ({
      id: o.id,
      name: o.name,
      created_at: o.createTime ? timestampDate(o.createTime).toISOString() : null,
    }));
    const rows = list.map((o) => [o.id, o.created_at ?? "", o.name]);
    return {
      json: { organisations: list },
      text: table(["ID", "CREATED", "NAME"], [36, 24], rows, "no organisations"),
    };
  },

  async "contact create"({ organisations }, values) {
    const res = await organisations.createContact({
      organisationId: values.org as string,
      fields: contactFields(values),
    });
    return contactOutput(res.contact!);
  },

  async "contact update"({ organisations }, values) {
    const { contact } = await organisations.updateContact({
      organisationId: values.org as string,
      id: values.id as string,
      fields: contactFields(values),
    });
    return contactOutput(contact!);
  },
};

function contactOutput(contact: Contact) {
  const json = contactJson(contact);
  const name = [json.first_name, json.last_name].filter(Boolean).join(" ");
  return { json, text: `contact ${json.id} ${name}${json.email ? ` <${json.email}>` : ""}` };
}
