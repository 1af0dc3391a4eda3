// The stock connect-node client's closed loop, in a process of its own: what
// another team's service calling GetOrganisation would be (its process holds
// no service of this project, so none of their AsyncLocalStorage or promise
// hooks, which cost connect's promise-heavy client more than the project's).
// Reads its target from the environment, prints {perSecond, medianMs}.
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { closedLoop } from "./closed-loop.js";

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is required`);
  })();
const organisationId = env("BENCH_ORGANISATION_ID");
const credential: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${env("BENCH_TOKEN")}`);
  return next(req);
};
const client = createClient(
  OrganisationService,
  createConnectTransport({
    baseUrl: env("BENCH_URL"),
    httpVersion: env("BENCH_HTTP_VERSION") as "1.1" | "2",
    useBinaryFormat: true,
    interceptors: [credential],
  }),
);
const call = async () => {
  const res = await client.getOrganisation({ id: organisationId });
  if (res.organisation?.id !== organisationId) throw new Error("GetOrganisation answered another organisation");
};
// A fresh process: a second of calls first, so that what is measured runs optimised, as in the
// long-lived process that measures the other rows.
await closedLoop(call, Number(env("BENCH_IN_FLIGHT")), 1);
const result = await closedLoop(call, Number(env("BENCH_IN_FLIGHT")), Number(env("BENCH_SECONDS")));
process.stdout.write(JSON.stringify(result));
process.exit(0);
