/**
 * What the server writes about a request: the URL with credentials taken out.
 * Tokens belong in the Authorization header, which is never logged; a client
 * that puts one in the query string by mistake must not get it written down.
 */

/** Query parameters whose values are credentials (compared case-insensitively). */
export const CREDENTIAL_PARAMETERS = [
  'access_token',
  'token',
  'jwt',
  'key',
  'id_token',
  'refresh_token',
  'api_key',
  'apikey',
  'authorization',
  'bearer',
  'password',
  'secret',
] as const;

const CREDENTIALS = new Set<string>(CREDENTIAL_PARAMETERS);
export const REDACTED = '[REDACTED]';
/** Anything shaped like a JWT (header.payload.signature, base64url), wherever it appears. */
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).trim().toLowerCase();
  } catch {
    return raw.trim().toLowerCase();
  }
}

/** The names of credential parameters present in a URL's query string, as the client spelled them. */
export function credentialParameters(url: string): string[] {
  const at = url.indexOf('?');
  if (at < 0) return [];
  return url
    .slice(at + 1)
    .split('&')
    .map((pair) => pair.split('=', 1)[0]!)
    .filter((name) => CREDENTIALS.has(decodeName(name)));
}

/** The URL as it may be logged: credential parameter values and JWT-shaped text replaced. */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  let out = url;
  if (at >= 0) {
    const query = url
      .slice(at + 1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq < 0 ? pair : pair.slice(0, eq);
        return CREDENTIALS.has(decodeName(name)) && eq >= 0 ? `${name}=${REDACTED}` : pair;
      })
      .join('&');
    out = `${url.slice(0, at)}?${query}`;
  }
  return out.replace(JWT_SHAPE, REDACTED);
}
