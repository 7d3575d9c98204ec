/**
 * What the server writes about a request: the URL with credentials and personal
 * data taken out. Tokens belong in the Authorization header, which is never
 * logged; a client that puts one in the query string or the path by mistake
 * must not get it written down, nor an e-mail address it looks a contact up by.
 * Values are recognised by what they are once decoded (percent-encoding, and `+`
 * as a space in a query string), not by how they happen to be spelled.
 */

/**
 * Parts of a parameter name that make it a credential, whatever surrounds them and however it is
 * spelled (`access_token`, `accessToken`, `id_token`, `jwt`, `x-api-key`, `Authorization`); a name
 * ending in `key` is one too (`key`, `api_key`).
 */
const CREDENTIAL_PARTS = ['token', 'jwt', 'secret', 'password', 'passwd', 'auth', 'bearer', 'credential', 'apikey', 'signature'] as const;

export const REDACTED = '[REDACTED]';
export const EMAIL_REDACTED = '[E-MAIL]';
/**
 * Anything shaped like a JWT whose header is spelled the usual way (eyJ…), wherever it appears: the
 * pattern's matches, found by jwtShapes in time linear in the length (the pattern itself reads from
 * each eyJ to the end of its run: 5,300 of them took 88 ms, four times for a value decoded again).
 */
export const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const isBase64url = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 95;
const DOT = 46;

/**
 * Where JWT_SHAPE matches text, left to right, as [start, end): in a run of base64url characters and
 * dots, a segment whose first eyJ has four characters or more after it, a next segment of four or
 * more, and a dot after that; the match runs to the end of the segment after that dot.
 */
export function jwtShapes(text: string): [number, number][] {
  const found: [number, number][] = [];
  for (let start = 0; start < text.length; ) {
    const c = text.charCodeAt(start);
    if (!isBase64url(c) && c !== DOT) {
      start++;
      continue;
    }
    let end = start;
    while (end < text.length && (isBase64url(text.charCodeAt(end)) || text.charCodeAt(end) === DOT)) end++;
    // the run's segments between dots, by their offsets
    const bounds: [number, number][] = [];
    for (let from = start; ; ) {
      const dot = text.indexOf('.', from);
      const to = dot < 0 || dot >= end ? end : dot;
      bounds.push([from, to]);
      if (to === end) break;
      from = to + 1;
    }
    for (let k = 0; k + 2 < bounds.length; ) {
      const [from, to] = bounds[k]!;
      const at = text.slice(from, to).indexOf('eyJ');
      if (at >= 0 && to - (from + at + 3) >= 4 && bounds[k + 1]![1] - bounds[k + 1]![0] >= 4) {
        found.push([from + at, bounds[k + 2]![1]]);
        k += 3;
      } else k++;
    }
    start = end;
  }
  return found;
}

/** text with each JWT-shaped run (jwtShapes) replaced by [REDACTED]. */
function withoutJwtShapes(text: string): string {
  let out = '';
  let copied = 0;
  for (const [from, to] of jwtShapes(text)) {
    out += `${text.slice(copied, from)}${REDACTED}`;
    copied = to;
  }
  return out + text.slice(copied);
}
/** Runs of base64url text, alone or joined by dots: the candidates for a JWT or a part of one. */
const BASE64URL_RUNS = /[A-Za-z0-9_-]{2,}(?:\.[A-Za-z0-9_-]*){0,2}/g;
/**
 * An e-mail address anywhere in a text: a local part (quoted too, `"felix"@x.cz`; at most 64
 * characters, as an address's may hold), @, a domain. Bounded: unbounded, a text of 16,000 letters
 * and no @ took 128 ms, each position read to the end of the run; an address whose local part is
 * longer is found by its last 64 characters.
 */
const EMAIL_ANYWHERE = /(?:"[^"\r\n]{0,64}"|[^\s@<>()[\]\\,;:"/?&=#]{1,64})@[^\s@<>()[\]\\,;:"/?&=#]/;

/** Percent-decoded (and in a query string, `+` as a space first); undecodable text as it is. */
function decode(raw: string, plusIsSpace = true): string {
  const text = plusIsSpace ? raw.replaceAll('+', ' ') : raw;
  try {
    return decodeURIComponent(text);
  } catch {
    // a stray % among valid escapes: decode what can be decoded
    return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** A base64url segment decoded to a JSON object, else undefined. */
function jsonObjectOf(segment: string): Record<string, unknown> | undefined {
  if (segment.length < 2 || !/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  const text = Buffer.from(segment, 'base64url').toString('utf8');
  if (!/^\s*\{/.test(text)) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a run of base64url text (up to three dot-separated segments) is a JWT or a part
 * of one: a segment that decodes to a JOSE header (a JSON object with "alg") makes the run
 * one; so does a JSON object in a run of two or three segments (header.payload or
 * payload.signature, a token split over parameters) or a lone segment that decodes to a
 * JSON object (a payload sent apart from its header). A signature alone is random text,
 * unrecognisable and useless without the other two.
 */
function isJwtPart(run: string): boolean {
  const segments = run.split('.');
  const objects = segments.map(jsonObjectOf);
  if (objects.some((o) => o !== undefined && typeof o.alg === 'string')) return true;
  return objects.some((o) => o !== undefined);
}

/** Whether a decoded text holds a JWT, a part of one, or a JWT-shaped run. */
function holdsJwt(text: string): boolean {
  if (jwtShapes(text).length > 0) return true;
  for (const match of text.matchAll(BASE64URL_RUNS)) if (isJwtPart(match[0])) return true;
  return false;
}

/** Whether a decoded text holds an e-mail address. */
export function holdsEmail(text: string): boolean {
  return text.includes('@') && EMAIL_ANYWHERE.test(text);
}

/** How many times more a decoded value is decoded again while that changes it: a client (or a proxy) that encodes twice still gets judged by what it sent. */
const MORE_DECODINGS = 3;

/**
 * What a decoded value is replaced by in the log, or undefined when it may be logged as it is:
 * judged as it stands and as it reads decoded again (`jana%2540x.cz`, an address encoded twice,
 * is `jana%40x.cz` once decoded and an address the second time).
 */
function redaction(decoded: string): string | undefined {
  let text = decoded;
  for (let more = 0; ; more++) {
    if (holdsJwt(text)) return REDACTED;
    if (holdsEmail(text)) return EMAIL_REDACTED;
    const again = decode(text, false);
    if (more === MORE_DECODINGS || again === text) return undefined;
    text = again;
  }
}

/** Whether a client's text (a request id) may be logged and echoed as it is: neither a token nor an e-mail address. */
export function isLoggable(text: string): boolean {
  return redaction(text) === undefined;
}

/** A name lower-cased without separators: `Access-Token`, `access_token` and `accessToken` are one name. */
function squash(name: string): string {
  return name.trim().toLowerCase().replace(/[-_.\s]/g, '');
}

function isCredentialName(raw: string): boolean {
  const name = squash(decode(raw));
  return name.endsWith('key') || CREDENTIAL_PARTS.some((part) => name.includes(part));
}

/** The names of credential parameters present in a URL's query string, as the client spelled them. */
export function credentialParameters(url: string): string[] {
  const at = url.indexOf('?');
  if (at < 0) return [];
  return url
    .slice(at + 1)
    .split('&')
    .map((pair) => pair.split('=', 1)[0]!)
    .filter((name) => name !== '' && isCredentialName(name));
}

/**
 * The URL as it may be logged. Each path segment and each query parameter is decoded
 * and judged by what it holds: a JWT or a part of one (by structure: base64url segments
 * that decode to a JOSE header or a JSON payload, however the header is spelled) is
 * replaced by [REDACTED], an e-mail address by [E-MAIL]; the values of credential
 * parameters are [REDACTED] whatever they hold. Parameter names and the path's other
 * segments stay, so the shape of the request is still readable.
 */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  const path = (at < 0 ? url : url.slice(0, at))
    .split('/')
    .map((segment) => redaction(decode(segment, false)) ?? segment)
    .join('/');
  if (at < 0) return withoutJwtShapes(path);
  const query = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      const nameRedaction = redaction(decode(name));
      if (nameRedaction) return nameRedaction;
      if (eq < 0) return pair;
      if (isCredentialName(name)) return `${name}=${REDACTED}`;
      const valueRedaction = redaction(decode(pair.slice(eq + 1)));
      return valueRedaction ? `${name}=${valueRedaction}` : pair;
    })
    .join('&');
  return withoutJwtShapes(`${path}?${query}`);
}
