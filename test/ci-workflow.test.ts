/**
 * Issue 12, items 10-12 (CI: block a broken delivery): `convx serve` on a dataset of contacts
 * and assets only (a directory and its imported .duckdb file), why a validation run fails on
 * stderr and in the github/junit formats, and a port in use or a missing file as a usage error.
 * The port and the serve run spawn the built binary (bin/convx.js over dist/).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, dataset, SAMPLES, serveInProcess, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'test-secret-that-is-long-enough';
const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');
const DELIVERIES = join(SAMPLES, '..', 'deliveries');
const WELCOME = readFileSync(join(DELIVERIES, 'welcome.json'), 'utf8');

/** Contacts and assets of samples/shop, and nothing else: what a pipeline that only validates ships. */
function validationOnly(): string {
  return dataset({
    'contacts.csv': readFileSync(join(SAMPLES, 'contacts.csv')),
    'assets.csv': readFileSync(join(SAMPLES, 'assets.csv')),
  });
}

const REPORT_ROUTES = [
  '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30',
  '/v1/conversions',
  '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30',
  '/v1/campaigns/k-1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30',
  '/v1/deliveries/sf-1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30',
  '/v1/deliveries/sf-1/d-1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30',
];

interface Spawned {
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<number | null>;
}

function spawnConvx(argv: string[], env: Record<string, string> = {}): Spawned {
  const child = spawn(process.execPath, [BIN, ...argv], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.resume();
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exit };
}

/** What probe finds in a running child's output; fails when the child exits first. */
async function until<T>(server: Spawned, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (server.child.exitCode !== null) throw new Error(`convx exited with ${server.child.exitCode}: ${server.stderr()}`);
    if (Date.now() > end) throw new Error(`timed out: ${server.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('item 10: convx serve on a dataset of contacts and assets only', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const o of opened) await o.close();
  });

  async function appFor(path: string) {
    const served = await ServedDataset.load(path, { poolSize: 2 });
    const app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test' });
    opened.push({ close: async () => (await app.close(), await served.retire()) });
    return app;
  }

  it.each([
    ['a directory', false],
    ['its imported .duckdb file', true],
  ])('serves validation from %s, and the report routes answer a 404 no-orders problem', async (_label, imported) => {
    let path = validationOnly();
    if (imported) {
      const file = join(tempDir(), 'validation.duckdb');
      const run = await cli(['data', 'import', path, '--into', file]);
      expect(run.code, run.stderr).toBe(0);
      path = file;
    }
    const app = await appFor(path);
    const headers = { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'default', '1h')}` };
    for (const url of REPORT_ROUTES) {
      const res = await app.inject({ method: 'GET', url, headers });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const body = JSON.parse(res.body);
      expect(body).toMatchObject({ type: 'urn:convx:problem:no-orders', status: 404 });
      expect(body.detail).toMatch(/holds no orders/);
      expect(body.detail).not.toContain(path); // the server's paths are its own
    }
    const validation = await app.inject({
      method: 'POST',
      url: '/v4/delivery/e-mail/validate',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: WELCOME,
    });
    expect(validation.statusCode).toBe(200);
    const body = JSON.parse(validation.body);
    expect(body.audience.deliverable).toBeGreaterThan(0);
    expect(body.render.errors).toEqual([]);
  });

  it('still refuses orders without touches, and a dataset with neither reports nor contacts', async () => {
    const orders = dataset({
      'orders.csv': readFileSync(join(SAMPLES, 'orders.csv')),
      'contacts.csv': readFileSync(join(SAMPLES, 'contacts.csv')),
    });
    await expect(ServedDataset.load(orders)).rejects.toThrow(/has orders but no touches table: expected touches\.csv.*reports need both/);
    const assets = dataset({ 'assets.csv': readFileSync(join(SAMPLES, 'assets.csv')) });
    await expect(ServedDataset.load(assets)).rejects.toThrow(/has nothing to serve: reports need orders and touches, delivery validation needs contacts/);
  });

  it('starts the built binary on it, logs that it serves validation only, and answers over HTTP', async () => {
    const dir = validationOnly();
    const server = spawnConvx(['serve', '--data', dir, '--port', '0'], { CONVX_JWT_SECRET: SECRET });
    try {
      const url = await until(server, () => /"msg":"listening","url":"([^"]+)"/.exec(server.stderr())?.[1]);
      await until(server, () => (server.stderr().includes('serving delivery validation only') ? true : undefined));
      const authorization = `Bearer ${await signDevelopmentToken(SECRET, 'default', '1h')}`;
      const report = await fetch(`${url}/v1/conversions`, { headers: { authorization } });
      expect(report.status).toBe(404);
      expect(((await report.json()) as { type: string }).type).toBe('urn:convx:problem:no-orders');
      const validation = await fetch(`${url}/v4/delivery/e-mail/validate`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: WELCOME,
      });
      expect(validation.status).toBe(200);
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});

describe('API mode against a server of a validation-only dataset', () => {
  it('a report, items, drill or order is a data error (exit 2) in the server\'s words, not "the API has no URL" (exit 5)', async () => {
    const dir = validationOnly();
    // convx serve in process: what is checked here is API mode's answer (the built binary serves it above).
    const server = await serveInProcess(['--data', dir, '--port', '0'], { CONVX_JWT_SECRET: SECRET });
    const { url } = server;
    try {
      const env = { CONVX_TOKEN: await signDevelopmentToken(SECRET, 'default', '1h') };
      const api = ['--api', `${url}/v1`];
      for (const argv of [
        ['report', ...api, '--from', '2024-01-01', '--to', '2024-04-30'],
        ['items', ...api, '--from', '2024-01-01', '--to', '2024-04-30', '--all'],
        ['drill', 'k-1', ...api],
        ['order', 'o-2', ...api],
      ]) {
        const run = await cli(argv, { env });
        expect(run.code, argv.join(' ')).toBe(2);
        expect(run.stderr).toBe(
          'convx: error: the dataset this server serves holds no orders, so it has no conversions to report; it answers delivery validation only (POST /v4/delivery/e-mail/validate)\n',
        );
        expect(run.stdout).toBe('');
      }
      // The validation route of the same server still answers.
      const validate = await cli(['validate', join(DELIVERIES, 'welcome.json'), ...api, '--delivery-api', `${url}/v4`, '-o', 'json'], { env });
      expect(validate.code).toBe(0);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

/** samples/shop opened once (for validation) and lent to item 11's commands (kept-backends.ts): the tests are about the verdict. */
const kept = keptBackends();

describe('item 11: a failing validation says why', () => {
  const argv = (file: string, ...more: string[]) => ['validate', join(DELIVERIES, file), '--data', SAMPLES, ...more];
  const WHY = 'convx: not ready: 6 warnings, more than --max-warnings 5';

  it.each(['github', 'junit', 'table', 'json'])('-o %s with --max-warnings: the reason on stderr, exit 1', async (format) => {
    const run = await kept(argv('warnings.json', '-o', format, '--max-warnings', '5'));
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`${WHY}\n`);
    const passing = await kept(argv('warnings.json', '-o', format, '--max-warnings', '6'));
    expect(passing.code).toBe(0);
    expect(passing.stderr).toBe('');
  });

  it('github: an ::error annotation gives the reason, with the file', async () => {
    const run = await kept(argv('warnings.json', '-o', 'github', '--max-warnings', '5'));
    const file = join(DELIVERIES, 'warnings.json').replace(/:/g, '%3A').replace(/,/g, '%2C');
    expect(run.stdout).toContain(`::error file=${file},title=convx validate::not ready: 6 warnings, more than --max-warnings 5\n`);
    expect(run.stdout).toMatch(/::notice title=convx validate::\d+ of \d+ deliverable; 0 errors, 6 warnings\n$/);
    const passing = await kept(argv('warnings.json', '-o', 'github', '--max-warnings', '6'));
    expect(passing.stdout).not.toContain('::error');
    // errors and too many warnings: the annotation names both, as stderr does
    const both = await kept(argv('defect-missing-subject.json', '-o', 'github', '--max-warnings', '0'));
    expect(both.code).toBe(1);
    const reason = 'not ready: 1 error (missing_subject) and 5 warnings, more than --max-warnings 0';
    expect(both.stderr).toBe(`convx: ${reason}\n`);
    expect(both.stdout).toContain(`title=convx validate::${reason}\n`);
  });

  it('junit: each failing warning case says it fails for --max-warnings', async () => {
    const xml = (await kept(argv('warnings.json', '-o', 'junit', '--max-warnings', '5'))).stdout;
    const failures = [...xml.matchAll(/<failure type="warning" message="([^"]*)"/g)].map((m) => m[1]!);
    expect(failures.length).toBeGreaterThan(0);
    for (const message of failures) expect(message).toMatch(/^6 warnings, more than --max-warnings 5: /);
  });

  it('errors are named on stderr too; a table on a terminal shows its verdict instead', async () => {
    const errors = await kept(argv('defect-unknown-asset.json', '-o', 'json'));
    expect(errors.code).toBe(1);
    expect(errors.stderr).toBe('convx: not ready: 1 error (asset_not_found)\n');
    const terminal = await kept(argv('warnings.json', '--max-warnings', '5'), { tty: true, env: { NO_COLOR: '1' } });
    expect(terminal.code).toBe(1);
    expect(terminal.stdout).toMatch(/NOT READY: 6 warnings \(more than --max-warnings 5\)\n$/);
    expect(terminal.stderr).toBe('');
  });

  it.skipIf(process.platform !== 'linux')('a bash step with pipefail that pipes the JSON into head still fails, and stderr says why', async () => {
    const { spawnSync } = await import('node:child_process');
    const files = ['welcome-all-languages.json', 'defect-unknown-asset.json', 'welcome.json'].map((f) => join(DELIVERIES, f));
    // some 70 KB of JSON, more than a pipe holds: head has gone before convx is done writing
    const step = 'exec "$0" "$@" | head -n 5 > /dev/null';
    const run = spawnSync('bash', ['-eo', 'pipefail', '-c', step, process.execPath, BIN, 'validate', ...files, '--data', SAMPLES, '--sample-size', '20', '-o', 'json'], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`convx: not ready: ${files[1]}: 1 error (asset_not_found)\n`);
  });
});

describe('item 12: a port in use and missing files are usage errors', () => {
  let blocker: Server | undefined;
  afterAll(() => blocker?.close());

  it('the built binary on a port in use says so, with the real port, and exits 2 without loading the data', async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const server = spawnConvx(['serve', '--data', SAMPLES, '--port', String(port)], { CONVX_JWT_SECRET: SECRET });
    const code = await server.exit;
    expect(code).toBe(2);
    expect(server.stderr()).toMatch(new RegExp(`^convx: error: port ${port} is already in use on 127\\.0\\.0\\.1\\nhint: .*--port`));
    expect(server.stderr()).not.toMatch(/EADDRINUSE|unexpected error|listening/);
  });

  it.each([
    ['the validate request file', ['validate', 'no-such-request.json', '--data', SAMPLES], 'no-such-request.json'],
    ['validate --data', ['validate', join(DELIVERIES, 'welcome.json'), '--data', 'no-such-dataset'], 'no-such-dataset'],
    ['serve --data', ['serve', '--data', 'no-such-dataset', '--port', '0'], 'no-such-dataset'],
    ['serve --data FILE.duckdb', ['serve', '--data', 'no-such.duckdb', '--port', '0'], 'no-such.duckdb'],
    ['serve --jwks', ['serve', '--data', SAMPLES, '--port', '0', '--jwks', 'no-such-keys.json'], 'no-such-keys.json'],
    ['serve --jwt-public-key', ['serve', '--data', SAMPLES, '--port', '0', '--jwt-public-key', 'no-such-key.pem'], 'no-such-key.pem'],
  ])('a missing file for %s is "not found: PATH", exit 2', async (_label, argv, path) => {
    const run = await cli(argv, { env: { CONVX_JWT_SECRET: SECRET }, cwd: tempDir() });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^convx: error: not found: ${path.replace('.', '\\.')}\\n`));
    expect(run.stderr).not.toMatch(/ENOENT|unexpected error/);
    expect(run.stdout).toBe('');
  });
});
