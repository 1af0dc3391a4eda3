// The connected applications of the member's organisation: each with its
// scopes in plain words (marked when it registered itself), when access was
// granted, and a Revoke button that asks first (a disclosure, no script:
// the pages allow none) before its form posts; logout.
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
