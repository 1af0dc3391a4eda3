// The organisation service as its own process.
import { serviceMain } from "../shared/service-main.js";
import { createOrganisationApp } from "./organisation-app.js";

await serviceMain({ name: "organisation", port: (c) => c.ORGANISATION_RPC_PORT, create: createOrganisationApp });
