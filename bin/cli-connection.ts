// Where the bizcard command finds the services and the internal credential,
// its clients of them, and what it says when either fails: the URL it tried and
// where the credential came from (or every place it looked), so that a new
// operator knows what to start or set.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { Code, type ConnectError } from "@connectrpc/connect";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { createRpcClient } from "../services/shared/rpc/client.js";

export type ServiceName = "organisation" | "auth" | "webhook" | "delivery";

const DEFAULT_PORTS: Record<ServiceName, number> = { auth: 7101, organisation: 7102, webhook: 7103, delivery: 7104 };

/**
 * <NAME>_RPC_URL, else loopback on <NAME>_RPC_PORT or the default port, read
 * as the platform reads them (blank is unset, a port is trimmed), so that the
 * environment that started the platform on other ports points the command there.
 */
export function serviceUrl(name: ServiceName, env: NodeJS.ProcessEnv = process.env): string {
  const key = name.toUpperCase();
  const url = env[`${key}_RPC_URL`]?.trim();
  const port = env[`${key}_RPC_PORT`]?.trim();
  return url || `http://127.0.0.1:${port || DEFAULT_PORTS[name]}`;
}

interface Credential {
  token: string | undefined;
  /** Where it was found, or undefined when nowhere. */
  source: "INTERNAL_RPC_TOKEN" | "file" | undefined;
  /** DATA_DIR's token file (as npm start writes it). */
  file: string;
}

/**
 * INTERNAL_RPC_TOKEN (the first of a comma-separated list: servers
 * accept any, clients send the first), else DATA_DIR's file.
 */
export function internalCredential(env: NodeJS.ProcessEnv = process.env): Credential {
  const file = path.resolve(env.DATA_DIR ?? "./data", "internal-rpc-token");
  const first = (list: string) => list.split(",")[0]?.trim() || undefined;
  const fromEnv = env.INTERNAL_RPC_TOKEN ? first(env.INTERNAL_RPC_TOKEN) : undefined;
  if (fromEnv) return { token: fromEnv, source: "INTERNAL_RPC_TOKEN", file };
  const fromFile = existsSync(file) ? first(readFileSync(file, "utf8")) : undefined;
  return { token: fromFile, source: fromFile ? "file" : undefined, file };
}

/**
 * The line to print for an RPC that failed, naming the URL tried and the credential's origin where they are the cause.
 */
export function explainFailure(err: ConnectError, service: ServiceName): string {
  const [url, credential] = [serviceUrl(service), internalCredential()];
  const message = err.rawMessage || err.message;
  if (err.code === Code.Unavailable) {
    return `cannot reach the ${service} service at ${url} (${message}); is the platform running? Start it with npm start, or set ${service.toUpperCase()}_RPC_URL`;
  }
  if (err.code === Code.Unauthenticated) {
    if (credential.source === undefined) {
      return `no internal credential: INTERNAL_RPC_TOKEN is unset and ${credential.file} does not exist (set INTERNAL_RPC_TOKEN, or DATA_DIR to the folder npm start uses)`;
    }
    const where =
      credential.source === "INTERNAL_RPC_TOKEN"
        ? "from INTERNAL_RPC_TOKEN"
        : `from ${credential.file} (DATA_DIR; INTERNAL_RPC_TOKEN is unset)`;
    return `the ${service} service at ${url} refused the internal credential ${where}: it must be one the platform was started with`;
  }
  return message;
}

/** A client of each service, with the internal credential. */
export function serviceClients() {
  const { token } = internalCredential();
  const options = (name: ServiceName) => ({ baseUrl: serviceUrl(name), timeoutMs: 15_000, internalToken: token });
  return {
    organisations: createRpcClient(OrganisationService, options("organisation")),
    auth: createRpcClient(AuthService, options("auth")),
    webhook: createRpcClient(WebhookService, options("webhook")),
    deliveries: createRpcClient(DeliveryService, options("delivery")),
  };
}

export type ServiceClients = ReturnType<typeof serviceClients>;
