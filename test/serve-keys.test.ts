/**
 * `convx serve` refuses keys no token could pass, or anyone could forge with: a CONVX_JWT_SECRET of
 * white space alone, a --jwks file without a key that verifies RS256 or ES256. Both before the data
 * loads, exit 2, the secret never echoed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../src/server/auth.js';
import { cli, SAMPLES, tempDir } from './helpers.js';

describe('serve: keys that verify nothing are refused', () => {
  it('a blank CONVX_JWT_SECRET is a usage error that does not echo it; an empty one is no secret', async () => {
    for (const secret of [' ', '   \t ']) {
      const serve = await cli(['serve', '--data', SAMPLES, '--port', '0'], { env: { CONVX_JWT_SECRET: secret } });
      expect(serve.code).toBe(2);
      expect(serve.stderr).toMatch(/^convx: error: CONVX_JWT_SECRET is blank \(\d+ bytes of white space alone\): it would sign and verify tokens anyone can make\nhint: set it to a random secret of at least 32 bytes/);
      expect(serve.stderr).not.toContain(`"${secret}"`);
      expect(serve.stderr).not.toContain('listening');
    }
    const empty = await cli(['serve', '--data', SAMPLES, '--port', '0'], { env: { CONVX_JWT_SECRET: '' } });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no way to verify tokens: set CONVX_JWT_SECRET/);
    // the library refuses it too
    expect(() => createVerifier({ secret: ' ' })).toThrow(/blank/);
  });

  it('a --jwks file with an empty key set, or with no RSA or P-256 signing key, is refused', async () => {
    const dir = tempDir();
    const { publicKey } = await generateKeyPair('ES384');
    const p384 = { ...(await exportJWK(publicKey)), kid: 'k' };
    const { publicKey: p256 } = await generateKeyPair('ES256');
    const encryption = { ...(await exportJWK(p256)), use: 'enc' };
    const cases: [string, unknown, string][] = [
      ['empty.json', { keys: [] }, 'its "keys" list is empty'],
      ['other.json', { keys: [p384, encryption] }, 'none of its 2 keys is an RSA or P-256 public key'],
    ];
    for (const [name, set, why] of cases) {
      const file = join(dir, name);
      writeFileSync(file, JSON.stringify(set));
      const serve = await cli(['serve', '--data', SAMPLES, '--port', '0', '--jwks', file]);
      expect(serve.code, serve.stderr).toBe(2);
      expect(serve.stderr).toBe(
        `convx: error: ${file} holds no key that can verify a token (${why})\nhint: give a JSON Web Key Set with the RSA (RS256) or P-256 (ES256) public keys that sign the tokens\n`,
      );
    }
    // a set with one usable key among others builds
    const mixed = join(dir, 'mixed.json');
    writeFileSync(mixed, JSON.stringify({ keys: [p384, { ...(await exportJWK(p256)), alg: 'ES256', kid: 'ok' }] }));
    expect(typeof createVerifier({ jwksFile: mixed })).toBe('function');
  });
});
