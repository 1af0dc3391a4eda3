// GET /: where a developer lands. What the platform is, and the way to
// everything an integrator reads: the reference, the document to import,
// the event catalog, the OAuth metadata, the members' page, health.
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
