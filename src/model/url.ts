/** Ids as segments of a URL's path (DESIGN 4.14: ids in URLs are percent-encoded), the same bytes as the SQL of local/models/links.ts. */

/** DuckDB's url_encode in JavaScript: every UTF-8 byte but A-Z a-z 0-9 - _ . ~ percent-encoded, in upper-case hex. */
export function urlEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * An id as one segment of a URL's path: urlEncode's bytes, and an id that is exactly `.` or `..`
 * with its dots encoded too (`%2E`, `%2E%2E`): written as they are, they are dot segments that
 * curl and every URL parser remove (`/v1/campaigns/../conversions` is `/v1/conversions`).
 * (WHATWG's parser takes `%2E%2E` for `..` too: API mode sends its paths without one.)
 */
export function urlSegment(id: string): string {
  return id === '.' || id === '..' ? id.replaceAll('.', '%2E') : urlEncode(id);
}
