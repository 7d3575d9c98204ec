/**
 * What the server writes about a request: the URL with credentials taken out.
 * Tokens belong in the Authorization header, which is never logged; a client
 * that puts one in the query string by mistake must not get it written down.
 */

/**
 * Parts of a parameter name that make it a credential, whatever surrounds them and however it is
 * spelled (`access_token`, `accessToken`, `id_token`, `jwt`, `x-api-key`, `Authorization`); a name
 * ending in `key` is one too (`key`, `api_key`).
 */
const CREDENTIAL_PARTS = ['token', 'jwt', 'secret', 'password', 'passwd', 'auth', 'bearer', 'credential', 'apikey', 'signature'] as const;

export const REDACTED = '[REDACTED]';
/** Anything shaped like a JWT (header.payload.signature, base64url), wherever it appears. */
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/;
const JWT_SHAPES = new RegExp(JWT_SHAPE.source, 'g');

function decode(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
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

/** A path segment that is an e-mail address (a contact looked up by e-mail): personal data, not logged. */
const EMAIL_SHAPE = /^[^@\s/]+@[^@\s/]+$/;

/**
 * The URL as it may be logged: the values of credential parameters, and any
 * parameter value or path segment that holds a JWT (percent-encoded or not),
 * replaced by [REDACTED]; a path segment that is an e-mail address by [E-MAIL].
 */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  const path = (at < 0 ? url : url.slice(0, at))
    .split('/')
    .map((segment) => (JWT_SHAPE.test(decode(segment)) ? REDACTED : EMAIL_SHAPE.test(decode(segment)) ? '[E-MAIL]' : segment))
    .join('/');
  if (at < 0) return path.replace(JWT_SHAPES, REDACTED);
  const query = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      if (eq >= 0 && (isCredentialName(name) || JWT_SHAPE.test(decode(pair.slice(eq + 1))))) return `${name}=${REDACTED}`;
      return JWT_SHAPE.test(decode(pair)) ? REDACTED : pair;
    })
    .join('&');
  return `${path}?${query}`.replace(JWT_SHAPES, REDACTED);
}
