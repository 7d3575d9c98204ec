/** Token policy of the server (issue 9, finding 9): exp required unless allowed, optional issuer and audience. */
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLOCK_TOLERANCE_SECONDS, createVerifier, secretKey, VerifiedTokens, type AuthConfig } from '../src/server/auth.js';
import { ProblemError } from '../src/server/problem.js';
import { cli } from './helpers.js';

const SECRET = 'auth-test-secret-long-enough';
const now = () => Math.floor(Date.now() / 1000);

async function token(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(secretKey(SECRET));
}

/** The problem a verifier answers with, or 'accepted'. */
async function outcome(config: AuthConfig, claims: Record<string, unknown>): Promise<string> {
  try {
    await createVerifier({ secret: SECRET, ...config })(`Bearer ${await token(claims)}`);
    return 'accepted';
  } catch (error) {
    if (error instanceof ProblemError) return `${error.problem.status} ${error.problem.type}: ${error.problem.detail}`;
    throw error;
  }
}

describe('token policy', () => {
  const exp = () => now() + 600;

  it('refuses a token without exp, unless the server allows tokens that never expire', async () => {
    expect(await outcome({}, { plugin: 'shop' })).toMatch(/^403 urn:convx:problem:invalid-token: the token has no "exp" claim/);
    expect(await outcome({}, { plugin: 'shop', exp: exp() })).toBe('accepted');
    expect(await outcome({ allowNoExpiry: true }, { plugin: 'shop' })).toBe('accepted');
    // allowing tokens without exp never allows an expired one
    expect(await outcome({ allowNoExpiry: true }, { plugin: 'shop', exp: now() - 3600 })).toMatch(/expired-token/);
  });

  it('refuses an exp past the year 9999 (a token that never expires) unless allowed, and a sub that is no text', async () => {
    expect(await outcome({}, { plugin: 'shop', exp: 1e300 })).toMatch(/^403 urn:convx:problem:invalid-token: the token's exp claim is past the year 9999/);
    expect(await outcome({}, { plugin: 'shop', exp: 253_402_300_799 })).toBe('accepted');
    expect(await outcome({ allowNoExpiry: true }, { plugin: 'shop', exp: 1e300 })).toBe('accepted');
    expect(await outcome({}, { plugin: 'shop', exp: exp(), sub: { a: 1 } })).toMatch(/^403 urn:convx:problem:invalid-token: the token's sub claim is not a text$/);
    expect(await outcome({}, { plugin: 'shop', exp: exp(), sub: 7 })).toMatch(/sub claim is not a text/);
    expect(await outcome({}, { plugin: 'shop', exp: exp(), sub: 'ci-job' })).toBe('accepted');
  });

  it('checks the issuer when one is configured', async () => {
    const config = { issuer: 'https://id.example.com' };
    expect(await outcome(config, { plugin: 'shop', exp: exp(), iss: 'https://id.example.com' })).toBe('accepted');
    expect(await outcome(config, { plugin: 'shop', exp: exp(), iss: 'https://evil.example.com' })).toMatch(/403 .*iss claim is not acceptable/);
    expect(await outcome(config, { plugin: 'shop', exp: exp() })).toMatch(/403 .*iss/);
    expect(await outcome({}, { plugin: 'shop', exp: exp(), iss: 'anyone' })).toBe('accepted');
  });

  it('checks the audience when one is configured', async () => {
    const config = { audience: 'convx' };
    expect(await outcome(config, { plugin: 'shop', exp: exp(), aud: 'convx' })).toBe('accepted');
    expect(await outcome(config, { plugin: 'shop', exp: exp(), aud: ['other', 'convx'] })).toBe('accepted');
    expect(await outcome(config, { plugin: 'shop', exp: exp(), aud: 'other' })).toMatch(/403 .*aud claim is not acceptable/);
    expect(await outcome(config, { plugin: 'shop', exp: exp() })).toMatch(/403 .*aud/);
  });

  it('convx token signs the issuer and audience a server checks', async () => {
    const run = await cli(['token', '--plugin', 'shop', '--issuer', 'https://id.example.com', '--audience', 'convx'], {
      env: { CONVX_JWT_SECRET: SECRET },
      now: new Date().toISOString(),
    });
    expect(run.code).toBe(0);
    const verify = createVerifier({ secret: SECRET, issuer: 'https://id.example.com', audience: 'convx' });
    expect(await verify(`Bearer ${run.stdout.trim()}`)).toMatchObject({ plugin: 'shop' });
    await expect(createVerifier({ secret: SECRET, audience: 'another' })(`Bearer ${run.stdout.trim()}`)).rejects.toThrow(/aud/);
  });
});

describe('verified tokens are remembered, never past their expiry', () => {
  afterEach(() => vi.useRealTimers());

  /** The problem type of a verification, or the plugin it grants. */
  const verdict = (verify: ReturnType<typeof createVerifier>, token: string) =>
    verify(`Bearer ${token}`).then(
      (credentials) => credentials.plugin,
      (error: unknown) => (error instanceof ProblemError ? error.problem.type : String(error)),
    );

  it('refuses a remembered token once jose would: exp plus the clock tolerance', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const verify = createVerifier({ secret: SECRET });
    const valid = await token({ plugin: 'shop', exp: now() + 60 });
    expect(await verdict(verify, valid)).toBe('shop');
    vi.setSystemTime(Date.now() + (60 + CLOCK_TOLERANCE_SECONDS - 1) * 1000);
    expect(await verdict(verify, valid)).toBe('shop');
    vi.setSystemTime(Date.now() + 1000);
    expect(await verdict(verify, valid)).toBe('urn:convx:problem:expired-token');
    expect(await verdict(verify, valid)).toBe('urn:convx:problem:expired-token');
  });

  it('keys on the whole token: another signature of a remembered token is still checked', async () => {
    const verify = createVerifier({ secret: SECRET });
    const valid = await token({ plugin: 'shop', exp: now() + 600 });
    expect(await verdict(verify, valid)).toBe('shop');
    const forged = `${valid.slice(0, valid.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;
    expect(await verdict(verify, forged)).toBe('urn:convx:problem:invalid-token');
    expect(await verdict(verify, `${valid}x`)).toBe('urn:convx:problem:invalid-token');
    expect(await verdict(verify, valid)).toBe('shop');
  });

  it('holds at most its limit, forgetting the least recently used token first', () => {
    const tokens = new VerifiedTokens(2);
    const until = now() + 600;
    tokens.set('a', { plugin: 'a' }, until);
    tokens.set('b', { plugin: 'b' }, until);
    expect(tokens.get('a')?.plugin).toBe('a');
    tokens.set('c', { plugin: 'c' }, until);
    expect(tokens.get('b')).toBeUndefined();
    expect(tokens.get('a')?.plugin).toBe('a');
    expect(tokens.get('c')?.plugin).toBe('c');
    // d takes a's place (a is now the least recently used); d has expired: not answered, and forgotten
    tokens.set('d', { plugin: 'd' }, now() - 1);
    expect(tokens.get('a')).toBeUndefined();
    expect(tokens.get('d')).toBeUndefined();
    tokens.set('e', { plugin: 'e' }, until);
    expect(tokens.get('c')?.plugin).toBe('c');
    expect(tokens.get('e')?.plugin).toBe('e');
  });
});
