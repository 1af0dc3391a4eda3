// The login page of an interaction: the member's email and password, the
// interaction's CSRF token and the browser's form token (form-guard.ts); for an authorization request, the application
// asking.
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
