// The bizcard command's work: a client of each service, each command's calls
// and what they print, and how a failure is told. Loaded by bizcard-cli.ts
// once a command line has parsed.
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../services/shared/contact-json.js";
import { deliveryJson, ownedDeliveryJson } from "../gateway/routes/delivery-json.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { createClient, deleteClient, listClients } from "./client-commands.js";
import { UsageError, contactFields, parse, serviceOf, wholeNumber } from "./cli-commands.js";
import { deliveriesLog } from "./deliveries-log.js";
import { recoverDeliveries, recoverUsageProblem } from "./deliveries-recover.js";
import { rotateSecret } from "./subscription-commands.js";
import { reencryptSecrets } from "./secret-commands.js";
import { explainFailure, internalCredential, serviceUrl, type ServiceName } from "./cli-connection.js";

function clients() {
  const credential = internalCredential();
  const options = (name: ServiceName) => ({
    baseUrl: serviceUrl(name),
    timeoutMs: 15_000,
    internalToken: credential.token,
  });
  return {
    organisations: createRpcClient(OrganisationService, options("organisation")),
    auth: createRpcClient(AuthService, options("auth")),
    webhook: createRpcClient(WebhookService, options("webhook")),
    deliveries: createRpcClient(DeliveryService, options("delivery")),
  };
}

export async function run(argv: string[]): Promise<{ json: unknown; text: string }> {
  const { command, values, positionals } = parse(argv);
  const { organisations, auth, deliveries, webhook } = clients();

  switch (command) {
    case "org create": {
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
    }
    case "client create":
      return createClient(auth, values);
    case "client list":
      return listClients(auth, values);
    case "client delete":
      return deleteClient(auth, positionals[0]!);
    case "contact create":
    case "contact update": {
      const fields = contactFields(values);
      const organisationId = values.org as string;
      const res =
        command === "contact create"
          ? await organisations.createContact({ organisationId, fields })
          : await organisations.updateContact({ organisationId, id: values.id as string, fields });
      const json = contactJson(res.contact!);
      const name = [json.first_name, json.last_name].filter(Boolean).join(" ");
      return { json, text: `contact ${json.id} ${name}${json.email ? ` <${json.email}>` : ""}` };
    }
    case "subscriptions rotate-secret": {
      if (!/^[1-9]\d{0,15}$/.test(positionals[0]!))
        throw new UsageError(
          `ID: expected a subscription id (a positive whole number), not ${JSON.stringify(positionals[0]!.slice(0, 40))}`,
        );
      return rotateSecret(webhook, {
        organisationId: values.org as string,
        clientId: values.client as string,
        id: BigInt(positionals[0]!),
      });
    }
    case "secrets reencrypt":
      return reencryptSecrets(webhook);
    case "deliveries failed": {
      const limit = values.limit === undefined ? 50 : wholeNumber("limit", values.limit as string, 1, 100);
      const res = await deliveries.listFailedDeliveries({
        organisationId: (values.org as string | undefined) ?? "",
        pageSize: limit,
      });
      const list = res.deliveries.map(ownedDeliveryJson);
      const lines = list.map(
        (d) =>
          `delivery ${d.id}  ${d.updated_at}  ${d.event_type} ${d.event_id}  subscription ${d.subscription_id} (org ${d.organisation_id}, client ${d.client_id})  ${d.attempts} attempts, last: ${d.error ?? d.status_code ?? "no answer"}`,
      );
      return { json: { deliveries: list }, text: lines.length ? lines.join("\n") : "no failed deliveries" };
    }
    case "deliveries log": {
      const limit = values.limit === undefined ? 50 : wholeNumber("limit", values.limit as string, 1, 100);
      const subscriptionId = BigInt(
        wholeNumber("subscription", values.subscription as string, 1, Number.MAX_SAFE_INTEGER),
      );
      return deliveriesLog(
        { organisationId: values.org as string, clientId: values.client as string, subscriptionId, limit },
        deliveries,
        webhook,
      );
    }
    case "deliveries retry": {
      const res = await deliveries.retryDelivery({
        owner: { organisationId: values.org as string, clientId: values.client as string },
        subscriptionId: BigInt(wholeNumber("subscription", values.subscription as string, 1, Number.MAX_SAFE_INTEGER)),
        deliveryId: BigInt(wholeNumber("id", values.id as string, 1, Number.MAX_SAFE_INTEGER)),
      });
      const json = deliveryJson(res.delivery!);
      return { json, text: `delivery ${json.id} ${json.status}, next attempt ${json.next_retry_at ?? "none"}` };
    }
    case "deliveries recover": {
      const [subscriptionId, since] = [positionals[0]!, values.since as string];
      const problem = recoverUsageProblem(subscriptionId, since);
      if (problem) throw new UsageError(problem);
      return recoverDeliveries(deliveries, {
        organisationId: values.org as string,
        clientId: values.client as string,
        subscriptionId,
        since,
      });
    }
  }
  throw new UsageError(`unknown command: ${command}`);
}

/** snake_case name of a Connect code: "not_found", "invalid_argument", … */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function fail(json: boolean, status: 1 | 2, error: string, description: string, text: string): never {
  if (json) process.stdout.write(`${JSON.stringify({ error, error_description: description })}\n`);
  else process.stderr.write(text);
  process.exit(status);
}

/** Runs the command line; prints its answer, or its failure and exits 1 (2 for a usage error). */
export async function runCommand(argv: string[], json: boolean): Promise<void> {
  try {
    const result = await run(argv);
    process.stdout.write(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
  } catch (err) {
    if (err instanceof UsageError)
      fail(json, 2, "invalid_usage", err.message, `bizcard: ${err.message}\n${err.usage}\n`);
    const e = ConnectError.from(err);
    const service = serviceOf(argv);
    const message = explainFailure(e, service, serviceUrl(service), internalCredential());
    fail(json, 1, codeName(e.code), message, `bizcard: ${message} (${codeName(e.code)})\n`);
  }
}
