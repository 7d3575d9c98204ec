/**
 * Entity tags of report and items answers. An answer is a function of the data
 * loaded, the plugin and the request (its route and parameters, and the query
 * parsed from them, which holds the defaults resolved against today's date, in a
 * canonical form that no order or spelling of the parameters changes): the tag is a hash of
 * those, known before any query runs, so a matching If-None-Match is a 304
 * without touching the database. The data's version is a hash of its files
 * (local/open.ts dataVersion): a reload of changed files changes every tag, one of
 * unchanged files keeps them.
 */
import { createHash } from 'node:crypto';

/** JSON with every object's keys sorted: the same value whatever order it was built in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * A strong entity tag, quoted as the ETag header carries it. The request enters in a
 * canonical form: its route, its query parameters (decoded, sorted by name; a repeated
 * parameter keeps its values' order) and the parsed query, so `?a=1&b=2` and `?b=2&a=1`
 * (or a value spelled with %-escapes or not) get one tag, as they get one answer.
 */
export function entityTag(datasetVersion: string, plugin: string, path: string, params: Readonly<Record<string, string | readonly string[] | undefined>>, parsedQuery: unknown): string {
  const hash = createHash('sha256').update(canonicalJson([datasetVersion, plugin, path, params, parsedQuery])).digest('base64url');
  return `"${hash.slice(0, 32)}"`;
}

/**
 * Whether an If-None-Match header matches a tag (RFC 9110 13.1.2: weak
 * comparison, so W/"x" matches "x"; * matches any current answer).
 */
export function noneMatch(header: string | string[] | undefined, tag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const opaque = tag.replace(/^W\//, '');
  return value
    .split(',')
    .map((candidate) => candidate.trim().replace(/^W\//, ''))
    .some((candidate) => candidate === opaque);
}
