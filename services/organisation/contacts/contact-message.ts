// Entity <-> wire. The same Contact message is what RPC answers, what events
// carry and what the gateway renders.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ContactSchema, type Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { Contact } from "./contact.entity.js";

export function toContactMessage(c: Contact): ContactMessage {
  return create(ContactSchema, {
    id: c.id,
    organisationId: c.organisationId,
    firstName: c.firstName,
    lastName: c.lastName,
    email: c.email,
    phone: c.phone,
    company: c.company,
    jobTitle: c.jobTitle,
    website: c.website,
    address: c.address,
    notes: c.notes,
    createTime: timestampFromDate(c.createdAt),
    updateTime: timestampFromDate(c.updatedAt),
  });
}
