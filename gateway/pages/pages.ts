// The HTML pages, rendered by eta with every interpolation escaped: no markup
// is built by concatenating strings.
import { Eta } from "eta";
import * as templates from "./templates.js";
import { ClientRegistration } from "../../gen/bizcard/auth/v1/auth_pb.js";

const eta = new Eta({ autoEscape: true, cache: true });
for (const [name, template] of Object.entries(templates)) eta.loadTemplate(`@${name}`, template);

export interface ScopeText {
  name: string;
  description: string;
}

interface LoginPage {
  action: string;
  csrfToken: string;
  formToken: string;
  /** The application asking; none for the account login. */
  clientName?: string;
  /** The email typed before a failed attempt, and the failure. */
  email?: string;
  message?: string;
}

interface ConsentPage {
  interactionId: string;
  csrfToken: string;
  formToken: string;
  clientName: string;
  memberEmail: string;
  organisationName: string;
  scopes: ScopeText[];
  /** The redirect URI's host. */
  redirectHost: string;
  selfRegistered?: SelfRegistered;
  /** The request's fields, carried as hidden inputs (name, value). */
  fields: [string, string][];
}

interface ApplicationsPage {
  csrfToken: string;
  formToken: string;
  memberEmail: string;
  notice?: string;
  applications: {
    clientId: string;
    name: string;
    selfRegistered?: SelfRegistered;
    scopes: ScopeText[];
    granted: string;
    grantedIso: string;
  }[];
}

export interface MessagePage {
  title: string;
  text: string;
  detail?: string;
  link?: { href: string; label: string };
}

export interface LandingPage {
  groups: { title: string; links: { href: string; label: string; text: string }[] }[];
}

export const pages = {
  login: (data: LoginPage): string => eta.render("@login", { email: "", ...data }),
  consent: (data: ConsentPage): string => eta.render("@consent", data),
  applications: (data: ApplicationsPage): string => eta.render("@applications", data),
  message: (data: MessagePage): string => eta.render("@message", data),
  landing: (data: LandingPage): string => eta.render("@landing", data),
};

// Clients not registered by the operator: self-registered (RFC 7591) or known
// by a Client ID Metadata Document (their client_id is its https URL). Their
// names are their own claims, so the consent page says so.
export interface SelfRegistered {
  /** A metadata document client: the URL that identifies it. */
  identifiedBy?: string;
}

/** How a page marks a client of this registration, or undefined for an operator's client. */
export function selfRegistered(
  registration: ClientRegistration | undefined,
  clientId: string,
): SelfRegistered | undefined {
  if (registration === ClientRegistration.DYNAMIC) return {};
  if (registration === ClientRegistration.METADATA_DOCUMENT) return { identifiedBy: clientId };
  return undefined;
}
