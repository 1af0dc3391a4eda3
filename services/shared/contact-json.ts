// The public JSON of a contact: what webhook events carry in `data`, what
// GET /oauth/contacts lists and what `bizcard contact …` prints. snake_case,
// every field present (empty string when unset), RFC 3339 times.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Contact } from "../../gen/bizcard/organisation/v1/organisation_pb.js";

export interface ContactJson {
  id: string;
  first_name: string;
  last_name: string;
  email: string;
  phone: string;
  company: string;
  job_title: string;
  website: string;
  address: string;
  notes: string;
  created_at: string;
  updated_at: string;
}

export function contactJson(c: Contact): ContactJson {
  return {
    id: c.id,
    first_name: c.firstName,
    last_name: c.lastName,
    email: c.email,
    phone: c.phone,
    company: c.company,
    job_title: c.jobTitle,
    website: c.website,
    address: c.address,
    notes: c.notes,
    created_at: c.createTime ? timestampDate(c.createTime).toISOString() : "",
    updated_at: c.updateTime ? timestampDate(c.updateTime).toISOString() : "",
  };
}
