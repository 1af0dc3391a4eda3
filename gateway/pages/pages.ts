// The HTML pages, rendered by eta with every interpolation escaped
// (autoEscape): no markup is built by concatenating strings. The templates
// live in TypeScript modules beside this one so that the compiled gateway
// (dist/, see the Dockerfile) carries them without copying files.
import { Eta } from "eta";
import { applications } from "./applications.js";
import { consent } from "./consent.js";
import { landing } from "./landing.js";
import { layout } from "./layout.js";
import { login } from "./login.js";
import { message } from "./message.js";
import type { SelfRegistered } from "./self-registered.js";

const eta = new Eta({ autoEscape: true, cache: true });
eta.loadTemplate("@layout", layout);
eta.loadTemplate("@login", login);
eta.loadTemplate("@consent", consent);
eta.loadTemplate("@applications", applications);
eta.loadTemplate("@message", message);
eta.loadTemplate("@landing", landing);

export interface ScopeText {
  name: string;
  description: string;
}

export interface LoginPage {
  /** The form's target: /oauth/interaction/{id}/login. */
  action: string;
  csrfToken: string;
  /** The browser's form token (form-guard.ts). */
  formToken: string;
  /** The application asking, for an authorization request; none for the account login. */
  clientName?: string;
  /** The email typed before, kept after a failed attempt. */
  email?: string;
  /** A failure to show above the form. */
  message?: string;
}

export interface ConsentPage {
  interactionId: string;
  csrfToken: string;
  formToken: string;
  clientName: string;
  memberEmail: string;
  /** The organisation the member acts for, by its name. */
  organisationName: string;
  scopes: ScopeText[];
  /** Where the browser goes after the decision (the redirect URI's host). */
  redirectHost: string;
  /** Set for an application the operator did not register. */
  selfRegistered?: SelfRegistered;
  /** The request's fields, carried as hidden inputs (name, value). */
  fields: [string, string][];
}

export interface ApplicationsPage {
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
