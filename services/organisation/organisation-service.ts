// OrganisationService: organisations, members and their credentials check,
// contacts. Built from its dependencies; main.ts (or the embedded start)
// serves it.
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { LockMode, UniqueConstraintViolationException, type MikroORM } from "@mikro-orm/postgresql";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import {
  MemberSchema,
  OrganisationSchema,
  type OrganisationService,
  type Member as MemberMessage,
  type Organisation as OrganisationMessage,
} from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { isEmailAddress, normaliseEmail } from "../shared/email.js";
import { enqueueEvent } from "../shared/outbox/writer.js";
import { readPage, timeIdKeyset } from "../shared/pagination.js";
import { invalid, notFound, requireUuid, isUuid } from "../shared/validation.js";
import { ContactEntity, type Contact } from "./contacts/contact.entity.js";
import { readContactFields } from "./contacts/contact-fields.js";
import { contactCreator } from "./contacts/contact-create.js";
import { contactEvent, toContactMessage } from "./contacts/contact-message.js";
import { MemberEntity, type Member } from "./members/member.entity.js";
import {
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  PasswordQueueFullError,
  dummyHash,
  hashPassword,
  needsRehash,
  verifyPassword,
} from "./members/password.js";
import { OrganisationEntity, type Organisation } from "./organisations/organisation.entity.js";

export const ORGANISATION_SCHEMA = "organisation";

export interface OrganisationServiceDeps {
  orm: MikroORM;
  subjectPrefix: string;
  /** Called after a transaction that wrote an event commits. */
  onEventCommitted: () => void;
  /** CreateContact's statement as a named prepared statement (real PostgreSQL only: database.ts onRealPostgres). */
  preparedStatements?: boolean;
}

function readEmail(value: string): string {
  const email = normaliseEmail(value);
  if (!email) throw invalid("email", "required");
  if (!isEmailAddress(email)) throw invalid("email", "expected an email address");
  return email;
}

function readPassword(value: string): string {
  if ([...value].length < PASSWORD_MIN_LENGTH) throw invalid("password", `at least ${PASSWORD_MIN_LENGTH} characters`);
  if (value.length > PASSWORD_MAX_LENGTH) throw invalid("password", `at most ${PASSWORD_MAX_LENGTH} characters`);
  return value;
}

function readName(value: string): string {
  const name = value.trim();
  if (!name) throw invalid("name", "required");
  if ([...name].length > 200) throw invalid("name", "at most 200 characters");
  if (/[\u0000-\u001f\u007f]/.test(name)) throw invalid("name", "must not contain control characters");
  return name;
}

function readContactName(fields: { firstName?: string; lastName?: string }): void {
  if (!fields.firstName && !fields.lastName) throw invalid("first_name", "first_name or last_name is required");
}

const toOrganisationMessage = (o: Organisation): OrganisationMessage =>
  create(OrganisationSchema, { id: o.id, name: o.name, createTime: timestampFromDate(o.createdAt) });

const toMemberMessage = (m: Member): MemberMessage =>
  create(MemberSchema, {
    id: m.id,
    organisationId: m.organisationId,
    email: m.email,
    createTime: timestampFromDate(m.createdAt),
  });

function emailTaken(err: unknown): never {
  if (err instanceof UniqueConstraintViolationException) {
    throw new ConnectError("email: a member with this email already exists", Code.AlreadyExists);
  }
  throw err;
}

/** Password hashing that cannot get a turn soon enough is refused, not queued (password.ts). */
async function passwordWork<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof PasswordQueueFullError) {
      throw new ConnectError("too many password checks at once; try again shortly", Code.ResourceExhausted);
    }
    throw err;
  }
}

export function createOrganisationService(deps: OrganisationServiceDeps): ServiceImpl<typeof OrganisationService> {
  const { orm } = deps;
  const events = { schema: ORGANISATION_SCHEMA, subjectPrefix: deps.subjectPrefix };
  const contacts = contactCreator(orm, events, deps.preparedStatements === true);

  /**
   * Tenancy: a contact is looked up by its id AND its organisation, in the
   * query itself; another organisation's contact is NOT_FOUND, like a missing one.
   */
  async function findContact(req: { id: string; organisationId: string }, em = orm.em.fork(), lock?: LockMode) {
    const organisationId = requireUuid("organisation_id", req.organisationId);
    if (!isUuid(req.id)) throw notFound("contact");
    const contact = await em.findOne(ContactEntity, { id: req.id.toLowerCase(), organisationId }, { lockMode: lock });
    if (!contact) throw notFound("contact");
    return contact;
  }

  const newMember = (organisationId: string, email: string, passwordHash: string) => ({
    id: randomUUID(),
    organisationId,
    email,
    passwordHash,
    createdAt: new Date(),
  });

  return {
    async createOrganisation(req, ctx) {
      const name = readName(req.name);
      const email = readEmail(req.ownerEmail);
      const passwordHash = await passwordWork(hashPassword(readPassword(req.ownerPassword), undefined, ctx.signal));
      const [organisation, owner] = await orm.em
        .fork()
        .transactional(async (em) => {
          // One flush at commit: the organisation's insert first, as the member's foreign key needs.
          const organisation = em.create(OrganisationEntity, { id: randomUUID(), name, createdAt: new Date() });
          return [organisation, em.create(MemberEntity, newMember(organisation.id, email, passwordHash))] as const;
        })
        .catch(emailTaken);
      return { organisation: toOrganisationMessage(organisation), owner: toMemberMessage(owner) };
    },

    // A hot lookup: one statement, no unit of work, no entity hydration.
    async getOrganisation(req) {
      if (!isUuid(req.id)) throw notFound("organisation");
      const row = (await orm.em
        .getConnection()
        .execute(
          `select "id", "name", "created_at" from "${ORGANISATION_SCHEMA}"."organisation" where "id" = ?`,
          [req.id.toLowerCase()],
          "get",
        )) as { id: string; name: string; created_at: string } | undefined;
      if (!row) throw notFound("organisation");
      const createdAt = orm.em.getPlatform().parseDate(row.created_at) as Date;
      return { organisation: toOrganisationMessage({ id: row.id, name: row.name, createdAt }) };
    },

    async listOrganisations(req) {
      const page = await readPage(timeIdKeyset<Organisation>("createdAt"), req, (after, options) =>
        orm.em.fork().find(OrganisationEntity, after, options),
      );
      return { organisations: page.rows.map(toOrganisationMessage), nextPageToken: page.nextPageToken };
    },

    async createMember(req, ctx) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      const email = readEmail(req.email);
      const passwordHash = await passwordWork(hashPassword(readPassword(req.password), undefined, ctx.signal));
      const em = orm.em.fork();
      if (!(await em.findOne(OrganisationEntity, { id: organisationId }))) throw notFound("organisation");
      const member = em.create(MemberEntity, newMember(organisationId, email, passwordHash));
      await em.flush().catch(emailTaken);
      return { member: toMemberMessage(member) };
    },

    // Same work and the same answer for an unknown email and a wrong password.
    // PERMISSION_DENIED, never UNAUTHENTICATED: that code means only that the
    // caller's internal credential was refused (a misconfiguration, 500 at the gateway).
    async verifyMemberCredentials(req, ctx) {
      const email = normaliseEmail(req.email);
      const member = email ? await orm.em.fork().findOne(MemberEntity, { email }) : null;
      const ok = await passwordWork(
        verifyPassword(req.password, member?.passwordHash ?? (await dummyHash()), ctx.signal),
      );
      if (!member || !ok) {
        // A member whose hash is cheaper than a new one answers a wrong password
        // sooner than an unknown email would: spend the difference, so timing tells nothing.
        if (member && needsRehash(member.passwordHash))
          await passwordWork(verifyPassword(req.password, await dummyHash(), ctx.signal));
        throw new ConnectError("email or password is wrong", Code.PermissionDenied);
      }
      if (needsRehash(member.passwordHash)) {
        // An older hash is upgraded, only over the hash just verified: a password changed meanwhile is kept.
        const passwordHash = await hashPassword(req.password);
        const verified = { id: member.id, passwordHash: member.passwordHash };
        await orm.em.fork().nativeUpdate(MemberEntity, verified, { passwordHash });
      }
      return { member: toMemberMessage(member) };
    },

    async createContact(req) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      const fields = readContactFields(req.fields);
      readContactName(fields);
      const message = await contacts.create(organisationId, fields);
      if (!message) throw notFound("organisation");
      deps.onEventCommitted();
      return { contact: message };
    },

    async updateContact(req) {
      requireUuid("organisation_id", req.organisationId);
      const fields = readContactFields(req.fields);
      if (Object.keys(fields).length === 0) throw invalid("fields", "set at least one field to change");
      const message = await orm.em.fork().transactional(async (em) => {
        // Select … for update: concurrent updates of one contact apply one on top of the
        // other and emit their events in commit order. (PESSIMISTIC_PARTIAL_WRITE, "skip
        // locked", would make a concurrent update find no row and answer NotFound.)
        const contact = await findContact(req, em, LockMode.PESSIMISTIC_WRITE);
        em.assign(contact, fields);
        readContactName(contact);
        contact.updatedAt = new Date();
        await em.flush();
        const message = toContactMessage(contact);
        await enqueueEvent(em, ORGANISATION_SCHEMA, contactEvent(events, EventType.CONTACT_UPDATED, message));
        return message;
      });
      deps.onEventCommitted();
      return { contact: message };
    },

    async getContact(req) {
      return { contact: toContactMessage(await findContact(req)) };
    },

    async listContacts(req) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      const page = await readPage(timeIdKeyset<Contact>("createdAt"), req, (after, options) =>
        orm.em.fork().find(ContactEntity, { organisationId, ...after }, options),
      );
      return { contacts: page.rows.map(toContactMessage), nextPageToken: page.nextPageToken };
    },
  };
}
