// What the parts of AuthService (auth-service.ts assembles them) are built from.
import type { Client as RpcClient } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { Config } from "../shared/config.js";
import type { Logger } from "../shared/logger.js";
import type { GrantStore } from "./grants/grant-store.js";
import type { FailureLimits } from "./rate-limit/failure-limits.js";

export interface AuthServiceDeps {
  orm: MikroORM;
  organisations: RpcClient<typeof OrganisationService>;
  allowInsecureRedirects: boolean;
  config: Config;
  /** RFC 9207 / RFC 8414 issuer: config.publicUrl. */
  issuer: string;
  grants: GrantStore;
  limits: FailureLimits;
  /** Where refused client metadata documents are logged. */
  logger?: Logger;
  /** After a commit that wrote an event to the outbox: wake the relay. */
  onEventCommitted?: () => void;
}
