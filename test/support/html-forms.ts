// The pages as a browser without JavaScript uses them: the hidden fields and
// action of a page's form, and a minimal browser that keeps the session
// cookie and follows nothing by itself (each suite checks every redirect).

/** The HTML escapes eta writes, undone (attribute values). */
export const unescapeHtml = (s: string) =>
  s.replace(
    /&(amp|lt|gt|quot|#39|#x27);/g,
    (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" })[e]!,
  );

/** Every hidden input of a page's forms, in order (a repeated name stays repeated). */
export function hiddenFieldList(html: string): [string, string][] {
  return [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
    unescapeHtml(m[1]!),
    unescapeHtml(m[2]!),
  ]);
}

/** Every hidden input of a page's forms, by name (the last of a repeated one). */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries(hiddenFieldList(html));
}

/** The action of the page's (first) form. */
export function formAction(html: string): string {
  const action = /<form[^>]* action="([^"]+)"/.exec(html);
  if (!action) throw new Error(`no form in the page:\n${html}`);
  return unescapeHtml(action[1]!);
}

export type FormFields = Record<string, string> | [string, string][];

/** The cookies of a Cookie header, by name, with those the answer's Set-Cookie lines set or remove. */
export function storeCookies(jar: Map<string, string>, res: Response): void {
  for (const line of res.headers.getSetCookie()) {
    const pair = line.split(";")[0]!;
    const name = pair.slice(0, pair.indexOf("="));
    const value = pair.slice(pair.indexOf("=") + 1);
    if (value === "" || /;\s*max-age=0/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
}

/** A jar's Cookie header. */
export const cookieHeader = (jar: Map<string, string>) =>
  [...jar].map(([name, value]) => `${name}=${value}`).join("; ");

/** A minimal browser against `base`: follows nothing by itself, keeps its cookies (the session's, the forms'). */
export function browser(base: string | URL) {
  const jar = new Map<string, string>();
  const go = async (url: string | URL, init: RequestInit = {}) => {
    const cookie = cookieHeader(jar);
    const res = await fetch(new URL(url, base), {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    storeCookies(jar, res);
    return res;
  };
  const submit = (url: string | URL, fields: FormFields) =>
    go(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });
  return { go, submit, cookie: () => cookieHeader(jar) };
}
