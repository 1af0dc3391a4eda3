// GET /: the developers' landing page, under the pages' policy like the sign-in pages.
import type { FastifyInstance } from "fastify";
import { DOCS_PATH } from "../openapi/docs-page.js";
import { sendPage } from "../pages/page-reply.js";
import { pages, type LandingPage } from "../pages/pages.js";
import { EVENT_TYPES_PATH } from "./event-types.js";

const LANDING: LandingPage = {
  groups: [
    {
      title: "Reference",
      links: [
        {
          href: DOCS_PATH,
          label: "API reference",
          text: "Every endpoint, scope and webhook event, with examples, in your browser.",
        },
        {
          href: "/openapi.json",
          label: "OpenAPI 3.1 document",
          text: "Import it into Postman, Insomnia or a code generator (also as /openapi.yaml).",
        },
        {
          href: EVENT_TYPES_PATH,
          label: "Webhook event types",
          text: "The JSON Schema and an example of every event body, for field mapping.",
        },
        {
          href: "/.well-known/oauth-authorization-server",
          label: "OAuth 2.0 server metadata",
          text: "Endpoints, grant types, PKCE and scopes (RFC 8414).",
        },
      ],
    },
    {
      title: "For members",
      links: [
        {
          href: "/account/applications",
          label: "Connected applications",
          text: "See which applications can access your organisation, and revoke their access.",
        },
      ],
    },
    {
      title: "Status",
      links: [
        { href: "/healthz", label: "Health", text: "The gateway is up." },
        { href: "/readyz", label: "Readiness", text: "The gateway and the services behind it answer." },
      ],
    },
  ],
};

export function landingRoutes(app: FastifyInstance): void {
  const html = pages.landing(LANDING);
  app.get("/", async (_request, reply) => sendPage(reply, 200, html));
}
