// Older hashes are upgraded at login: once a password has been verified
// against a hash made with weaker parameters than SCRYPT_COST, a new hash of
// it is stored, made with the current ones (password.ts).
import type { MikroORM } from "@mikro-orm/postgresql";
import { MemberEntity, type Member } from "./member.entity.js";
import { hashPassword, needsRehash } from "./password.js";

/**
 * Call only after `password` verified against `member.passwordHash`.
 * True when a new hash was stored.
 */
export async function upgradePasswordHash(orm: MikroORM, member: Member, password: string): Promise<boolean> {
  if (!needsRehash(member.passwordHash)) return false;
  const passwordHash = await hashPassword(password);
  // Only over the hash that was verified: a password changed meanwhile is kept.
  const updated = await orm.em
    .fork()
    .nativeUpdate(MemberEntity, { id: member.id, passwordHash: member.passwordHash }, { passwordHash });
  return updated > 0;
}
