/**
 * Load and faults together: a bounded autocannon load on `convx serve`
 * over loopback while the dataset's files are replaced and SIGHUP arrives twice
 * in quick succession. No request may fail, and once the reloads are done the
 * server answers exactly what local mode computes from the new files.
 */
import { spawn } from 'node:child_process';
import { cpSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { describe, expect, it } from 'vitest';
import { signDevelopmentToken } from '../src/server/auth.js';
import { cli, SAMPLES, tempDir } from './helpers.js';

const SECRET = 'load-test-secret-long-enough';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Replaces a file the way a careful exporter does: written beside it, then renamed over it. */
function replace(path: string, content: string): void {
  writeFileSync(`${path}.tmp`, content);
  renameSync(`${path}.tmp`, path);
}

/** Every other data line of a CSV (the header kept). */
function halve(text: string): string {
  const [header, ...lines] = text.trimEnd().split('\n');
  return `${[header, ...lines.filter((_, i) => i % 2 === 0)].join('\n')}\n`;
}

describe('load and faults', () => {
  it('answers a 32-connection load without a single failure while the data is replaced and reloaded twice', async () => {
    const dir = tempDir();
    cpSync(SAMPLES, dir, { recursive: true });
    const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
    const child = spawn(process.execPath, [bin, 'serve', '--data', dir, '--port', '0', '--rate-limit', '0'], {
      env: { ...process.env, CONVX_JWT_SECRET: SECRET },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const reloads = () => (stderr.match(/"msg":"reloaded"/g) ?? []).length;
    try {
      const began = Date.now();
      while (!/"msg":"listening"/.test(stderr)) {
        if (Date.now() - began > 20_000 || child.exitCode !== null) throw new Error(`server did not start: ${stderr}`);
        await sleep(50);
      }
      const url = /"url":"([^"]+)"/.exec(stderr)![1]!;
      const token = await signDevelopmentToken(SECRET, 'shop', '1h');
      const authorization = `Bearer ${token}`;
      const months = ['01', '02', '03', '04'];
      const requests = months.flatMap((m) => [
        { method: 'GET' as const, path: `/v1/conversions?dateFrom=2024-${m}-01&dateTo=2024-${m}-28`, headers: { authorization } },
        { method: 'GET' as const, path: `/v1/conversions/items?dateFrom=2024-${m}-01&dateTo=2024-${m}-28&limit=20`, headers: { authorization } },
      ]);

      // The load runs until both reloads are done and 32 more answers have come in (a count, not a time;
      // `amount` only bounds it); the faults arrive once each of the 32 connections has had an answer.
      let answered = 0;
      let load!: autocannon.Instance;
      const finished = new Promise<autocannon.Result>((resolve, reject) => {
        load = autocannon({ url, connections: 32, amount: 20_000, requests, timeout: 10, sampleInt: 100 }, (error, result) =>
          error ? reject(error) : resolve(result),
        );
      });
      load.on('response', () => answered++);
      const until = async (done: () => boolean, what: string) => {
        const waited = Date.now();
        while (!done()) {
          if (Date.now() - waited > 20_000) throw new Error(`${what}: ${stderr}`);
          await sleep(20);
        }
      };
      await until(() => answered >= 32, 'the load did not start');
      replace(join(dir, 'orders.csv'), halve(readFileSync(join(dir, 'orders.csv'), 'utf8')));
      child.kill('SIGHUP');
      await sleep(30);
      replace(join(dir, 'touches.csv'), halve(readFileSync(join(dir, 'touches.csv'), 'utf8')));
      child.kill('SIGHUP');
      await until(() => reloads() >= 2, 'the reloads did not finish');
      const afterReloads = answered;
      await until(() => answered >= afterReloads + 32, 'no answers after the reloads');
      load.stop();
      const result = await finished;

      expect(result.errors, stderr).toBe(0);
      expect(result.timeouts).toBe(0);
      expect(result.non2xx).toBe(0);
      expect(result['2xx']).toBeGreaterThan(20);
      expect(stderr).not.toMatch(/reload failed/);

      // After the last reload the server answers what local mode computes from the new files.
      const period = ['--from', '2024-01-01', '--to', '2024-04-30'];
      const served = await fetch(`${url}/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30&limit=1000`, { headers: { authorization } });
      const local = await cli(['report', '--data', dir, ...period, '--limit', '1000', '-o', 'json']);
      expect(served.status).toBe(200);
      expect(await served.json()).toEqual(JSON.parse(local.stdout));
      const servedItems = await fetch(`${url}/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=1000`, { headers: { authorization } });
      const localItems = await cli(['items', '--data', dir, ...period, '--limit', '1000', '-o', 'json']);
      expect(await servedItems.json()).toEqual(JSON.parse(localItems.stdout));
      // and that is not what the original files give
      const original = await cli(['items', '--data', SAMPLES, ...period, '--limit', '1000', '-o', 'json']);
      expect(JSON.parse(localItems.stdout).paging.totalCount).toBeLessThan(JSON.parse(original.stdout).paging.totalCount);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).not.toContain(token);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
