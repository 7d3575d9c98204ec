/**
 * What the CLI says when the API cannot be reached: the reason in words, with the system's code,
 * rather than a bare code (ENOTFOUND) or a stack. Real failures: a name under .invalid (which never
 * resolves) and a loopback TLS server whose certificate nobody signed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers.js';

describe('an API that cannot be reached', () => {
  it('names a host that does not resolve', async () => {
    const result = await cli(['report', '--api', 'http://convx-test.invalid/v1'], { env: { CONVX_TOKEN: 't' } });
    expect(result.code).toBe(5);
    expect(result.stdout).toBe('');
    // Without a resolver at all the lookup may fail as "try again" (EAI_AGAIN) rather than "no such name".
    expect(result.stderr).toMatch(
      /^convx: error: cannot reach the API at http:\/\/convx-test\.invalid\/v1\/conversions\?\S+: (no such host \(the name does not resolve: ENOTFOUND\)|the host name could not be looked up now \(DNS: EAI_AGAIN\) \(after 4 attempts\))\n/,
    );
  });

  it('says a TLS certificate is not trusted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convx-tls-'));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
    const server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const result = await cli(['report', '--api', url], { env: { CONVX_TOKEN: 't' } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^convx: error: cannot reach the API at https:\/\/127\.0\.0\.1:\d+\/v1\/conversions\?\S+: the server's TLS certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\)\n$/);
      expect(result.stderr).toContain(url);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('config set format', () => {
  it('says a per-command format is given per command', async () => {
    const home = mkdtempSync(join(tmpdir(), 'convx-cfg-'));
    const result = await cli(['config', 'set', 'format', 'markdown'], { env: { XDG_CONFIG_HOME: home } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'convx: error: config set format: "markdown" is not one of table, json, jsonl, csv, tsv\nhint: markdown is not a default every command can print: give it per command, e.g. convx report -o markdown\n',
    );
  });
});
