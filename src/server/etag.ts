/**
 * Entity tags of report and items answers. An answer is a function of the data
 * loaded, the plugin and the request (its URL, and the query parsed from it,
 * which holds the defaults resolved against today's date): the tag is a hash of
 * those, known before any query runs, so a matching If-None-Match is a 304
 * without touching the database. A reload gives the data a new version, so
 * every tag changes with it.
 */
import { createHash } from 'node:crypto';

/** A strong entity tag, quoted as the ETag header carries it. */
export function entityTag(datasetVersion: string, plugin: string, url: string, parsedQuery: unknown): string {
  const hash = createHash('sha256').update(JSON.stringify([datasetVersion, plugin, url, parsedQuery])).digest('base64url');
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
