// The consent page: which application asks, for what (each scope in plain
// words), on whose behalf (the member and the organisation, by name), and where the answer goes; for an application the
// operator did not register, a caution saying so. Allow and Deny post the
// interaction's fields back with its CSRF token and the browser's form token.
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
