// How long a fetched metadata document is used before it is fetched again:
// its Cache-Control max-age (draft-ietf-oauth-client-id-metadata-document lets
// the server respect HTTP caching within bounds of its own), with a floor (a
// no-store document is not fetched on every request) and a ceiling (a changed
// document is seen within a day).

/** The shortest use of a document, also for no-store and no-cache. */
export const MIN_CACHE_SECONDS = 5 * 60;
/** The longest, whatever max-age says. */
export const MAX_CACHE_SECONDS = 24 * 3600;
/** Without a max-age. */
export const DEFAULT_CACHE_SECONDS = 3600;

/** RFC 9111 §5.2: the Cache-Control directives that decide the lifetime, clamped to [MIN, MAX]. */
export function cacheSeconds(cacheControl: string | undefined): number {
  const directives = (cacheControl ?? "")
    .split(",")
    .map((d) => d.trim().toLowerCase())
    .filter(Boolean);
  if (directives.some((d) => d === "no-store" || d === "no-cache")) return MIN_CACHE_SECONDS;
  const maxAge = directives.map((d) => /^max-age\s*=\s*"?(\d+)"?$/.exec(d)).find((m) => m !== null);
  if (!maxAge) return DEFAULT_CACHE_SECONDS;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, Number(maxAge[1])));
}
