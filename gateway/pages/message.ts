// A page that only tells something: errors (an invalid authorization request,
// an expired sign-in, a refused form) and where to go next.
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
