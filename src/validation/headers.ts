/**
 * The request's `headers` (docs/validation.md, "Content checks"): the one-click
 * unsubscribe that Gmail and Yahoo require of bulk senders (RFC 2369 and RFC
 * 8058). Judged only when the request gives headers.
 */
import type { Finding } from '../model/validation.js';

/** The value of a header by name, in any case. */
const header = (headers: Record<string, string>, name: string) =>
  Object.entries(headers).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];

/** missing_list_unsubscribe, invalid_list_unsubscribe, missing_list_unsubscribe_post (warnings). */
export function headerFindings(headers: Record<string, string> | undefined): Finding[] {
  if (headers === undefined) return [];
  const at = (name: string) => ({ field: `headers.${name}` });
  const value = header(headers, 'List-Unsubscribe');
  if (!value?.trim()) {
    return [{ code: 'missing_list_unsubscribe', message: 'the headers have no List-Unsubscribe; Gmail and Yahoo require one of bulk senders', ...at('List-Unsubscribe') }];
  }
  // no < inside a target: each of 100,000 < had the pattern read on to the end, minutes of the main thread
  const targets = [...value.matchAll(/<([^<>]*)>/g)].map((m) => m[1]!.trim());
  const https = targets.filter((t) => /^https:\/\//i.test(t));
  if (!https.length && !targets.some((t) => /^mailto:\S+@\S+/i.test(t))) {
    return [{ code: 'invalid_list_unsubscribe', message: `List-Unsubscribe has no <https://…> or <mailto:…> address: ${value.slice(0, 200)}`, ...at('List-Unsubscribe') }];
  }
  const post = header(headers, 'List-Unsubscribe-Post');
  if (!https.length) {
    return [{ code: 'missing_list_unsubscribe_post', message: 'List-Unsubscribe has no https address, so no one-click unsubscribe (RFC 8058) is possible', ...at('List-Unsubscribe') }];
  }
  if (post?.trim() !== 'List-Unsubscribe=One-Click') {
    const message = post === undefined ? 'the headers have no List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058 one-click unsubscribe)' : `List-Unsubscribe-Post is "${post.slice(0, 200)}", not List-Unsubscribe=One-Click`;
    return [{ code: 'missing_list_unsubscribe_post', message, ...at('List-Unsubscribe-Post') }];
  }
  return [];
}
