/** Token policy of the server (issue 9, finding 9): exp required unless allowed, optional issuer and audience. */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createVerifier, secretKey, type AuthConfig } from '../src/server/auth.js';
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
