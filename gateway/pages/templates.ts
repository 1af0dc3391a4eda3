// The pages' eta templates, kept in TypeScript so that the compiled gateway
// carries them without copying files.

// The frame of every page (its body the only raw output: templates rendered by this same engine).
export const layout = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title><%= it.title %> · bizcard</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/pages.css">
</head>
<body>
<main class="card<%= it.wide ? ' card-wide' : '' %>" aria-labelledby="page-title">
<p class="brand" aria-hidden="true"><span class="brand-mark">b</span> bizcard</p>
<%~ it.body %>
</main>
</body>
</html>
`;

// The login page of an interaction: email, password, the interaction's CSRF token and the form token.
export const login = `<% layout("@layout", { title: "Sign in" }) %>
<h1 id="page-title">Sign in</h1>
<% if (it.clientName) { %>
<p class="lead">to continue to <strong><%= it.clientName %></strong></p>
<% } else { %>
<p class="lead">to manage the applications connected to your organisation</p>
<% } %>
<% if (it.message) { %>
<p class="alert" role="alert" id="login-error"><%= it.message %></p>
<% } %>
<form method="post" action="<%= it.action %>" class="stack">
<input type="hidden" name="csrf_token" value="<%= it.csrfToken %>">
<input type="hidden" name="form_token" value="<%= it.formToken %>">
<div class="field">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required<% if (!it.message) { %> autofocus<% } %> value="<%= it.email %>"<% if (it.message) { %> aria-describedby="login-error"<% } %>>
</div>
<div class="field">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required<% if (it.message) { %> autofocus<% } %>>
</div>
<button type="submit" class="button button-primary">Sign in</button>
</form>
`;

// The consent page: which application asks, for what, on whose behalf, where the answer goes; a caution
// for an application the operator did not register.
export const consent = `<% layout("@layout", { title: "Allow access?" }) %>
<h1 id="page-title"><span class="app-name"><%= it.clientName %></span> wants to access <span class="org-name"><%= it.organisationName %></span>, your bizcard organisation</h1>
<p class="lead">Signed in as <strong class="who"><%= it.memberEmail %></strong></p>
<% if (it.selfRegistered) { %>
<div class="caution" role="note">
<% if (it.selfRegistered.identifiedBy) { %>
<p>This application is identified by <strong class="client-id"><%= it.selfRegistered.identifiedBy %></strong>; it is not registered with your organisation: bizcard knows only what it says of itself.</p>
<% } else { %>
<p>This application registered itself; it is not registered with your organisation: bizcard knows only what it says of itself.</p>
<% } %>
<p>Its name is its own claim. If you allow, the code that grants access is sent to <strong class="host"><%= it.redirectHost %></strong>: allow only if you trust it.</p>
</div>
<% } %>
<h2 class="section-title">This will allow <span class="app-name"><%= it.clientName %></span> to:</h2>
<ul class="scopes">
<% for (const scope of it.scopes) { %>
<li><span class="scope-text"><%= scope.description %></span> <code class="scope-name"><%= scope.name %></code></li>
<% } %>
</ul>
<p class="note">After you decide, you will be sent back to <strong class="host"><%= it.redirectHost %></strong>.
You can withdraw this access at any time on the <a href="/account/applications">connected applications</a> page.</p>
<form method="post" action="/oauth/authorize/consent" class="actions">
<input type="hidden" name="interaction_id" value="<%= it.interactionId %>">
<input type="hidden" name="csrf_token" value="<%= it.csrfToken %>">
<input type="hidden" name="form_token" value="<%= it.formToken %>">
<% for (const [name, value] of it.fields) { %>
<input type="hidden" name="<%= name %>" value="<%= value %>">
<% } %>
<button type="submit" name="decision" value="deny" class="button">Deny</button>
<button type="submit" name="decision" value="allow" class="button button-primary">Allow</button>
</form>
`;

// The organisation's connected applications, each with a Revoke button that asks first (a disclosure:
// the pages allow no script); logout.
export const applications = `<% layout("@layout", { title: "Connected applications", wide: true }) %>
<div class="heading-row">
<h1 id="page-title">Connected applications</h1>
<form method="post" action="/account/logout">
<input type="hidden" name="csrf_token" value="<%= it.csrfToken %>">
<input type="hidden" name="form_token" value="<%= it.formToken %>">
<button type="submit" class="button button-small">Sign out</button>
</form>
</div>
<p class="lead">Signed in as <strong class="who"><%= it.memberEmail %></strong>. These applications can access your organisation's data.</p>
<% if (it.notice) { %>
<p class="notice" role="status"><%= it.notice %></p>
<% } %>
<% if (it.applications.length === 0) { %>
<p class="empty">No application has access to your organisation.</p>
<% } else { %>
<table class="apps">
<caption class="visually-hidden">Applications with access to your organisation</caption>
<thead>
<tr><th scope="col">Application</th><th scope="col">Access</th><th scope="col">Granted</th><th scope="col"><span class="visually-hidden">Action</span></th></tr>
</thead>
<tbody>
<% for (const app of it.applications) { %>
<tr>
<th scope="row" class="app-name"><%= app.name %><% if (app.selfRegistered) { %> <span class="badge" title="Not registered with this bizcard service<%= app.selfRegistered.identifiedBy ? "; identified by " + app.selfRegistered.identifiedBy : "" %>">self-registered</span><% } %></th>
<td><ul class="scopes scopes-compact">
<% for (const scope of app.scopes) { %>
<li><%= scope.description %></li>
<% } %>
</ul></td>
<td><time datetime="<%= app.grantedIso %>"><%= app.granted %></time></td>
<td>
<details class="confirm">
<summary class="button button-danger button-small" aria-label="Revoke access for <%= app.name %>">Revoke</summary>
<form method="post" action="/account/applications/revoke">
<p>Revoke access for <strong><%= app.name %></strong>? Its tokens stop working at once.</p>
<input type="hidden" name="csrf_token" value="<%= it.csrfToken %>">
<input type="hidden" name="form_token" value="<%= it.formToken %>">
<input type="hidden" name="client_id" value="<%= app.clientId %>">
<button type="submit" class="button button-danger button-small">Yes, revoke access for <%= app.name %></button>
</form>
</details>
</td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
`;

// A page that only tells something (an error) and where to go next.
export const message = `<% layout("@layout", { title: it.title }) %>
<h1 id="page-title"><%= it.title %></h1>
<p class="lead"><%= it.text %></p>
<% if (it.detail) { %>
<p class="detail"><%= it.detail %></p>
<% } %>
<% if (it.link) { %>
<p><a class="button" href="<%= it.link.href %>"><%= it.link.label %></a></p>
<% } %>
`;

// GET /: where a developer lands, with the way to everything an integrator reads.
export const landing = `<% layout("@layout", { title: "Developers", wide: true }) %>
<h1 id="page-title">Build on bizcard</h1>
<p class="lead">An OAuth 2.0 authorization server, a REST API and signed webhooks: connect an application to an organisation, read its contacts, and be told when they change.</p>
<p class="cta"><a class="button button-primary" href="/docs">Open the API reference</a></p>
<% for (const group of it.groups) { %>
<h2 class="section-title"><%= group.title %></h2>
<ul class="links">
<% for (const link of group.links) { %>
<li><a href="<%= link.href %>"><%= link.label %></a> <code class="path"><%= link.href %></code><span class="link-text"><%= link.text %></span></li>
<% } %>
</ul>
<% } %>
`;
