// The pages' one stylesheet, served as GET /assets/pages.css.
export const pagesCss = `:root {
  color-scheme: light;
  --ink: #1d2433;
  --muted: #5b6475;
  --line: #dfe3ea;
  --paper: #ffffff;
  --ground: #f3f5f9;
  --accent: #2f5bea;
  --accent-dark: #2146c4;
  --danger: #b42318;
  --focus: #f5b400;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 16px;
  line-height: 1.5;
  color: var(--ink);
  background: var(--ground);
}
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; align-items: flex-start; justify-content: center; padding: 8vh 1rem 2rem; }
.card { width: 100%; max-width: 26rem; background: var(--paper); border: 1px solid var(--line); border-radius: 12px; padding: 2rem; box-shadow: 0 1px 2px rgba(16, 24, 40, .05), 0 8px 24px rgba(16, 24, 40, .06); }
.card-wide { max-width: 52rem; }
.brand { margin: 0 0 1.5rem; font-weight: 700; letter-spacing: .01em; color: var(--muted); display: flex; align-items: center; gap: .5rem; }
.brand-mark { display: inline-grid; place-items: center; width: 1.75rem; height: 1.75rem; border-radius: 6px; background: var(--accent); color: #fff; font-size: 1rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.section-title { font-size: 1rem; margin: 1.5rem 0 .5rem; overflow-wrap: anywhere; }
.lead { margin: 0 0 1.25rem; color: var(--muted); overflow-wrap: anywhere; }
.lead strong, .note strong { color: var(--ink); }
.app-name { overflow-wrap: anywhere; }
.who { display: inline-block; max-width: 100%; overflow-wrap: anywhere; }
.stack { display: grid; gap: 1rem; }
.field { display: grid; gap: .35rem; }
label { font-weight: 600; font-size: .95rem; }
input[type="email"], input[type="password"] { font: inherit; padding: .6rem .75rem; border: 1px solid #b9c0cc; border-radius: 8px; width: 100%; background: #fff; color: var(--ink); }
.button { font: inherit; font-weight: 600; display: inline-flex; align-items: center; justify-content: center; padding: .6rem 1.1rem; border-radius: 8px; border: 1px solid #b9c0cc; background: #fff; color: var(--ink); cursor: pointer; text-decoration: none; }
.button:hover { background: var(--ground); }
.button-primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.button-primary:hover { background: var(--accent-dark); }
.button-danger { color: var(--danger); border-color: #f0b8b2; }
.button-danger:hover { background: #fef3f2; }
.button-small { padding: .35rem .8rem; font-size: .9rem; }
a { color: var(--accent-dark); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
input:focus-visible { border-color: var(--accent); }
.alert { margin: 0 0 1rem; padding: .75rem 1rem; border-radius: 8px; background: #fef3f2; border: 1px solid #f0b8b2; color: var(--danger); }
.caution { margin: 0 0 1.25rem; padding: .75rem 1rem; border-radius: 8px; background: #fffaeb; border: 1px solid #fedf89; color: #7a2e0e; overflow-wrap: anywhere; }
.caution p { margin: 0 0 .35rem; }
.caution p:last-child { margin: 0; }
.caution strong { color: var(--ink); }
.badge { display: inline-block; margin-left: .35rem; font-size: .75rem; font-weight: 600; color: #7a2e0e; background: #fffaeb; border: 1px solid #fedf89; padding: 0 .4rem; border-radius: 999px; vertical-align: middle; white-space: nowrap; }
.notice { margin: 0 0 1rem; padding: .75rem 1rem; border-radius: 8px; background: #ecfdf3; border: 1px solid #a6e9c5; color: #05603a; }
.scopes { margin: 0; padding: 0; list-style: none; display: grid; gap: .5rem; }
.scopes > li { padding: .65rem .8rem; border: 1px solid var(--line); border-radius: 8px; display: flex; flex-wrap: wrap; justify-content: space-between; gap: .25rem .75rem; }
.scope-name { font-size: .8rem; color: var(--muted); background: var(--ground); padding: .1rem .4rem; border-radius: 4px; align-self: center; }
.scopes-compact { gap: .2rem; }
.scopes-compact { padding-left: 1.1rem; list-style: disc; display: block; }
.scopes-compact > li { padding: 0 0 .2rem; border: 0; display: list-item; }
.note { color: var(--muted); font-size: .95rem; margin: 1.25rem 0; overflow-wrap: anywhere; }
.actions { display: grid; grid-template-columns: 1fr 1fr; gap: .75rem; margin-top: 1.5rem; }
.heading-row form { margin-bottom: .75rem; }
.heading-row { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.apps { width: 100%; border-collapse: collapse; margin-top: .5rem; }
.apps th, .apps td { text-align: left; vertical-align: top; padding: .75rem .5rem; border-top: 1px solid var(--line); }
.apps thead th { border-top: 0; font-size: .85rem; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.apps td:last-child { text-align: right; }
.apps time { white-space: nowrap; }
.confirm summary { display: inline-block; list-style: none; cursor: pointer; }
.confirm summary::-webkit-details-marker { display: none; }
.confirm form { text-align: left; max-width: 16rem; margin-left: auto; }
.confirm form p { margin: 0 0 .5rem; font-size: .9rem; }
.empty, .detail { color: var(--muted); }
.detail { font-size: .95rem; padding: .75rem 1rem; background: var(--ground); border-radius: 8px; overflow-wrap: anywhere; }
.cta { margin: 0 0 .5rem; }
.links { margin: 0; padding: 0; list-style: none; display: grid; gap: .5rem; }
.links > li { padding: .65rem .8rem; border: 1px solid var(--line); border-radius: 8px; display: grid; grid-template-columns: auto 1fr; gap: .15rem .75rem; align-items: baseline; }
.links a { font-weight: 600; }
.path { justify-self: end; font-size: .8rem; color: var(--muted); background: var(--ground); padding: .1rem .4rem; border-radius: 4px; overflow-wrap: anywhere; }
.link-text { grid-column: 1 / -1; color: var(--muted); font-size: .95rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
@media (max-width: 40rem) {
  body { padding-top: 1rem; }
  .card { padding: 1.25rem; }
  .apps thead { display: none; }
  .apps tr { display: grid; border-top: 1px solid var(--line); padding: .5rem 0; }
  .apps th, .apps td { border: 0; padding: .25rem 0; }
  .apps td:last-child { text-align: left; }
}
`;
