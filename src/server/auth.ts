/**
 * Bearer JWT verification with jose: HS256 with a shared secret, RS256/ES256
 * with a public key or a JWKS file. Only configured algorithms are accepted,
 * so `alg: none` and anything else is refused.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { UsageError } from '../errors.js';
import { problem, ProblemError } from './problem.js';

export const CLOCK_TOLERANCE_SECONDS = 30;

export interface AuthConfig {
  /** HS256 shared secret (CONVX_JWT_SECRET). */
  secret?: string;
  /** PEM file of an RSA or P-256 public key. */
  publicKeyFile?: string;
  /** A JSON Web Key Set file. */
  jwksFile?: string;
  /** When set, the token's `iss` claim must equal it. */
  issuer?: string;
  /** When set, the token's `aud` claim must hold it. */
  audience?: string;
  /** Accept tokens without an `exp` claim (they never expire: off by default). */
  allowNoExpiry?: boolean;
}

export interface Credentials {
  plugin: string;
  subject?: string;
}

export type Verifier = (authorization: string | undefined) => Promise<Credentials>;

type KeyChoice = { algorithms: string[]; key: Uint8Array | KeyObject | JWTVerifyGetKey };

function readConfigFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read the ${what} ${path}: ${(error as Error).message}`);
  }
}

function publicKey(path: string): KeyChoice {
  let key: KeyObject;
  try {
    key = createPublicKey(readConfigFile(path, 'public key'));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${path} is not a PEM public key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType === 'rsa') return { algorithms: ['RS256'], key };
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return { algorithms: ['ES256'], key };
  }
  throw new UsageError(`${path}: only RSA (RS256) and P-256 (ES256) public keys are supported`);
}

function jwks(path: string): KeyChoice {
  let set: unknown;
  try {
    set = JSON.parse(readConfigFile(path, 'JWKS file'));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
  }
  let key: JWTVerifyGetKey;
  try {
    key = createLocalJWKSet(set as Parameters<typeof createLocalJWKSet>[0]);
  } catch (error) {
    throw new UsageError(`${path} is not a JSON Web Key Set: ${(error as Error).message}`);
  }
  // A set without a key of the algorithms accepted would start a server no token can ever pass.
  const keys = (set as { keys: unknown[] }).keys;
  if (!keys.some(verifyingKey)) {
    throw new UsageError(
      `${path} holds no key that can verify a token (${keys.length === 0 ? 'its "keys" list is empty' : `none of its ${keys.length} keys is an RSA or P-256 public key`})`,
      [],
      'give a JSON Web Key Set with the RSA (RS256) or P-256 (ES256) public keys that sign the tokens',
    );
  }
  return { algorithms: ['RS256', 'ES256'], key };
}

/** A JWK that can verify RS256 or ES256: an RSA key, or an EC key on P-256, not restricted to another algorithm or use. */
function verifyingKey(jwk: unknown): boolean {
  if (typeof jwk !== 'object' || jwk === null) return false;
  const { kty, crv, alg, use } = jwk as Record<string, unknown>;
  if (use !== undefined && use !== 'sig') return false;
  if (kty === 'RSA') return alg === undefined || alg === 'RS256';
  return kty === 'EC' && crv === 'P-256' && (alg === undefined || alg === 'ES256');
}

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * A verifier whose keys a reload reads again (`convx serve`'s SIGHUP): a key removed from the JWKS
 * or a public key replaced is refused from then on, and the tokens it verified are remembered no
 * more. A key file that cannot be read then fails the reload, and the keys before stay.
 */
export function rereadableVerifier(config: AuthConfig): { verify: Verifier; reread(): void } {
  let current = createVerifier(config);
  return {
    verify: (authorization) => current(authorization),
    reread: () => {
      if (config.publicKeyFile || config.jwksFile) current = createVerifier(config);
    },
  };
}

/** Builds the verifier; a server with no key configured refuses to start. */
export function createVerifier(config: AuthConfig): Verifier {
  const choices: KeyChoice[] = [];
  if (config.secret !== undefined && config.secret !== '' && !config.secret.trim()) throw new UsageError('the HS256 secret is blank (white space alone)');
  if (config.secret) choices.push({ algorithms: ['HS256'], key: secretKey(config.secret) });
  if (config.publicKeyFile && config.jwksFile) throw new UsageError('give --jwt-public-key or --jwks, not both');
  if (config.publicKeyFile) choices.push(publicKey(config.publicKeyFile));
  if (config.jwksFile) choices.push(jwks(config.jwksFile));
  if (choices.length === 0) {
    throw new UsageError(
      'no way to verify tokens: set CONVX_JWT_SECRET (HS256), or pass --jwt-public-key FILE or --jwks FILE',
    );
  }
  const accepted = choices.flatMap((c) => c.algorithms);
  const verified = new VerifiedTokens(VERIFIED_TOKENS);

  return async (authorization) => {
    if (!authorization) throw new ProblemError(problem('missingCredentials', 'send an Authorization: Bearer <JWT> header'));
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new ProblemError(problem('invalidToken', 'the Authorization header is not "Bearer <JWT>"'));
    const token = match[1]!;
    const known = verified.get(token);
    if (known) return { ...known };
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new ProblemError(problem('invalidToken', 'the bearer token is not a JWT'));
    }
    const choice = choices.find((c) => alg !== undefined && c.algorithms.includes(alg));
    if (!choice) {
      throw new ProblemError(problem('invalidToken', `tokens signed with ${alg ?? 'no algorithm'} are not accepted (accepted: ${accepted.join(', ')})`));
    }
    let payload: JWTPayload;
    try {
      const options = {
        algorithms: choice.algorithms,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: config.allowNoExpiry ? [] : ['exp'],
        ...(config.issuer !== undefined ? { issuer: config.issuer } : {}),
        ...(config.audience !== undefined ? { audience: config.audience } : {}),
      };
      ({ payload } =
        typeof choice.key === 'function'
          ? await jwtVerify(token, choice.key, options)
          : await jwtVerify(token, choice.key, options));
    } catch (error) {
      throw new ProblemError(tokenProblem(error));
    }
    if (typeof payload.plugin !== 'string' || payload.plugin === '') {
      throw new ProblemError(problem('invalidToken', 'the token has no "plugin" claim'));
    }
    // jose checks a subject's type only where one is asked for: it names the token in rate limits and turns
    if (payload.sub !== undefined && typeof payload.sub !== 'string') throw new ProblemError(problem('invalidToken', 'the token\'s sub claim is not a text'));
    // an exp no clock reaches is a token that never expires, which only --allow-tokens-without-exp accepts
    if (!config.allowNoExpiry && typeof payload.exp === 'number' && payload.exp > LAST_EXPIRY) {
      throw new ProblemError(problem('invalidToken', 'the token\'s exp claim is past the year 9999 (tokens must expire; the server can be started to allow otherwise)'));
    }
    const credentials = { plugin: payload.plugin, ...(payload.sub ? { subject: payload.sub } : {}) };
    // jose refuses the token once exp is CLOCK_TOLERANCE_SECONDS in the past: so does the cache.
    if (typeof payload.exp === 'number') verified.set(token, credentials, payload.exp + CLOCK_TOLERANCE_SECONDS);
    return { ...credentials };
  };
}

/** The latest exp a token may have (the end of 9999, in seconds since 1970) unless tokens may never expire. */
const LAST_EXPIRY = 253_402_300_799;

/** How many verified tokens a verifier remembers. */
export const VERIFIED_TOKENS = 1024;

/**
 * Tokens already verified, by the whole token, with what they grant, until the second jose
 * would refuse them as expired: a client sends the same token on every request, and its
 * signature is checked once. Bounded: the least recently used token is forgotten first.
 * Only tokens that expire are kept; the keys and claims checked never change while it runs.
 */
export class VerifiedTokens {
  private readonly tokens = new Map<string, { credentials: Credentials; until: number }>();
  constructor(private readonly limit: number) {}

  get(token: string): Credentials | undefined {
    const entry = this.tokens.get(token);
    if (!entry) return undefined;
    this.tokens.delete(token);
    // jose's clock: whole seconds; the token is expired once now - tolerance reaches exp.
    if (Math.floor(Date.now() / 1000) >= entry.until) return undefined;
    this.tokens.set(token, entry);
    return entry.credentials;
  }

  set(token: string, credentials: Credentials, until: number): void {
    this.tokens.delete(token);
    if (this.tokens.size >= this.limit) this.tokens.delete(this.tokens.keys().next().value as string);
    this.tokens.set(token, { credentials, until });
  }
}

function tokenProblem(error: unknown) {
  if (error instanceof joseErrors.JWTExpired) return problem('expiredToken', 'the token has expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') {
      const why = error.claim === 'exp' ? ' (tokens must expire; the server can be started to allow otherwise)' : '';
      return problem('invalidToken', `the token has no "${error.claim}" claim${why}`);
    }
    return problem('invalidToken', error.claim === 'nbf' ? 'the token is not valid yet (nbf)' : `the token's ${error.claim} claim is not acceptable`);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return problem('invalidToken', 'the token signature does not verify');
  if (error instanceof joseErrors.JWKSNoMatchingKey) return problem('invalidToken', 'no key in the JWKS matches the token');
  return problem('invalidToken', 'the bearer token is malformed');
}

export interface DevelopmentClaims {
  issuer?: string;
  audience?: string;
}

/** A development token for `convx serve` (HS256 with the shared secret). */
export async function signDevelopmentToken(
  secret: string,
  plugin: string,
  expires: string,
  now = new Date(),
  claims: DevelopmentClaims = {},
): Promise<string> {
  const jwt = new SignJWT({ plugin })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setSubject('convx-dev')
    .setExpirationTime(Math.floor(now.getTime() / 1000) + parseDuration(expires));
  if (claims.issuer !== undefined) jwt.setIssuer(claims.issuer);
  if (claims.audience !== undefined) jwt.setAudience(claims.audience);
  return jwt.sign(secretKey(secret));
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** "90s", "15m", "1h", "7d", "2w" in seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) throw new UsageError(`--expires: "${text}" is not a duration like 90s, 15m, 1h, 7d or 2w`);
  return Number(m[1]) * UNITS[m[2]!]!;
}
