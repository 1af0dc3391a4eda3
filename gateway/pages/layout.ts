// The frame of every page: language, title, the stylesheet, a header and the
// page's body (the only raw output: templates rendered by this same engine).
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
