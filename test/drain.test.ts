/**
 * `convx serve` stops promptly on SIGTERM even when a client keeps its
 * connection alive: a connection busy when the drain begins falls idle once
 * its response is sent, and must then be closed rather than kept for the
 * keep-alive timeout (72 s) while the process waits.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, SAMPLES } from './helpers.js';

const SECRET = 'drain-secret';
const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');

/** A harmless validation: its request stays in flight while its body is still coming. */
const VALIDATION = { audience: { lists: ['l-1'] }, assets: [{ subject: 'Hi', html: '<p>Hello</p>' }] };

describe('convx serve: the shutdown drain', () => {
  it('ends as soon as a keep-alive request in flight is answered', async () => {
    const env = { ...process.env, CONVX_JWT_SECRET: SECRET };
    const child = spawn(process.execPath, [bin, 'serve', '--data', SAMPLES, '--port', '0'], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const agent = new http.Agent({ keepAlive: true });
    /** Waits (up to 20 s) until the server's log matches. */
    const logged = async (line: RegExp) => {
      const started = Date.now();
      while (!line.test(stderr)) {
        if (Date.now() - started > 20_000) throw new Error(`the server did not log ${line}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await logged(/"msg":"listening"/);
      const url = new URL(`${/"url":"([^"]+)"/.exec(stderr)![1]!}/v4/delivery/e-mail/validate`);
      const token = (await cli(['token', '--plugin', 'shop'], { env: { CONVX_JWT_SECRET: SECRET }, now: new Date().toISOString() })).stdout.trim();
      const body = Buffer.from(JSON.stringify(VALIDATION));
      const answered = new Promise<{ status: number; at: number }>((resolve, reject) => {
        const request = http.request(
          url,
          { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, at: Date.now() }));
          },
        );
        request.on('error', reject);
        // The headers and the body's first bytes: the request is admitted, and stays in flight
        // while the rest of its body has not come, until the drain has begun.
        request.write(body.subarray(0, 10));
        setTimeout(() => {
          child.kill('SIGTERM');
          logged(/"msg":"shutting down/).then(() => request.end(body.subarray(10)), reject);
        }, 400);
      });
      const response = await answered;
      expect(response.status).toBe(200);
      expect(await exited).toBe(0);
      // Stopped right after the answer, not after the keep-alive timeout or the drain limit.
      expect(Date.now() - response.at).toBeLessThan(3000);
      expect(stderr).toMatch(/"msg":"shutting down: draining requests in flight","signal":"SIGTERM","inFlight":1/);
      expect(stderr).toMatch(/"msg":"drained and stopped","drained":1/);
    } finally {
      agent.destroy();
      child.kill('SIGKILL');
    }
  }, 30_000);
});

describe('convx serve: a short CONVX_JWT_SECRET', () => {
  /** The log lines of a server started with this secret, up to its listening line and the one after, then stopped. */
  async function startedWith(secret: string): Promise<string> {
    const child = spawn(process.execPath, [bin, 'serve', '--data', SAMPLES, '--port', '0'], { env: { ...process.env, CONVX_JWT_SECRET: secret }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      const started = Date.now();
      while (!/"msg":"listening"/.test(stderr) && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 200));
      child.kill('SIGTERM');
      await exited;
      return stderr;
    } finally {
      child.kill('SIGKILL');
    }
  }

  it('is a warning on the log, its length but never its value; one of 32 bytes is not', async () => {
    // both servers at once: each mostly waits for its start
    const [short, long] = await Promise.all([startedWith('dev-secret-31-bytes-long-000000'), startedWith('dev-secret-32-bytes-long-0000000')]);
    expect(short).toContain('"msg":"warning: CONVX_JWT_SECRET is 31 bytes; HS256 wants at least 32 (a short secret can be guessed from one token, and any plugin\'s token signed with it): for development only"');
    expect(short).not.toContain('dev-secret-31-bytes-long-000000');
    expect(long).toMatch(/"msg":"listening","url":"[^"]+","pid":\d+,/);
    expect(long).not.toContain('warning');
  }, 60_000);
});
