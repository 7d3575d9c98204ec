/**
 * Issue 17, points 2 to 4: one tenant cannot slow the others within its rate
 * limit, the query budget bounds a whole request under concurrency, and a body
 * that never completes does not hold its connection. A real server on
 * 127.0.0.1 with two plugins; every load is bounded in requests, and the
 * assertions are structural (order of completion, the gate's and the pool's
 * figures), with wall-clock bounds only far from what is measured.
 */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, withQueryBudget } from '../src/local/db.js';
import type { ValidateResponse } from '../src/model/validation.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { BusyError, ConnectionPool, FairGate } from '../src/server/pool.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { DEFAULT_RENDER_LIMITS } from '../src/validation/limits.js';
import { MAX_RENDER_WORKERS } from '../src/validation/sandbox.js';
import { cli, csv, dataset, serveInProcess, tempDir, twoPluginFiles } from './helpers.js';
import { sql } from '../src/local/sql.js';

const SECRET = 'fairness-test-secret-long-enough';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CONTACT_HEADER = ['plugin_id', 'contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
const UNSUBSCRIBE = '<a href="https://x.dev/unsubscribe">Unsubscribe</a>';
const HTML = `<html><body><p>Hi</p>${UNSUBSCRIBE}</body></html>`;
const NESTED_LOOP = '{% for a in (1..10000) %}{% for b in (1..10000) %}x{% endfor %}{% endfor %}';
const A_CONTACTS = 50_000;

/**
 * Plugin A with enough orders that an items page of 1000 takes a while, and 50,000
 * contacts on list "big"; plugin B with one order and one contact.
 */
function twoTenants(): string {
  const orders: (string | number)[][] = [];
  const touches: string[][] = [];
  for (let i = 0; i < 20_000; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    const month = String(1 + (i % 4)).padStart(2, '0');
    orders.push(['A', `oa${i}`, `c${i % 5000}`, `2024-${month}-${day}T12:00:00Z`, 'EUR', 10 + (i % 97), 12 + (i % 97)]);
    touches.push(['A', `c${i % 5000}`, `2024-${month}-${day}T08:00:00Z`, 'click', 'campaign', `k${i % 50}`]);
  }
  orders.push(['B', 'ob', 'b1', '2024-03-02T10:00:00Z', 'CZK', 200, 242]);
  touches.push(['B', 'b1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'shared']);
  const contacts: (string | boolean)[][] = [['B', 'b1', 'b@x.dev', 'Bob', 'cs', 'CZ', true, false, 'l']];
  for (let i = 0; i < A_CONTACTS; i++) contacts.push(['A', `c${i}`, `u${i}@x.dev`, `N${i}`, i % 2 ? 'cs' : 'en', 'CZ', true, false, i < 3 ? 'l;big' : 'big']);
  return dataset({
    'orders.csv': csv(['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], orders),
    'touches.csv': csv(['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'], touches),
    'contacts.csv': csv(CONTACT_HEADER, contacts),
  });
}

const ITEMS = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=1000&sort=-conversionsAmount';
const B_ITEMS = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30';

/** The two tenants imported once into a .duckdb file: a server opens it in a tenth of the time the CSV files take. */
let dir: string;
beforeAll(async () => {
  dir = join(tempDir(), 'two-tenants.duckdb');
  const imported = await cli(['data', 'import', twoTenants(), '--into', dir]);
  expect(imported.code, imported.stderr).toBe(0);
});

async function serve(options: Partial<Parameters<typeof startServer>[0]>): Promise<RunningServer> {
  return startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test', ...options });
}

const tokens = new Map<string, string>();
/** A token of the plugin; `n` tells tokens of one plugin apart (another issued-at time). */
async function bearer(plugin: string, n = 0): Promise<string> {
  const key = `${plugin}/${n}`;
  // n = 0: the development token (subject convx-dev); else a token of subject user-n, since the gate
  // (like the rate limiter) counts a subject's tokens together.
  const token =
    n === 0
      ? await signDevelopmentToken(SECRET, plugin, '1h')
      : await new SignJWT({ plugin }).setProtectedHeader({ alg: 'HS256' }).setSubject(`user-${n}`).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
  if (!tokens.has(key)) tokens.set(key, `Bearer ${token}`);
  return tokens.get(key)!;
}

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
  /** Milliseconds from the start of the test's load. */
  at: number;
}

async function get(server: RunningServer, path: string, authorization: string, t0: number): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, { headers: { authorization } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, at: performance.now() - t0 };
}

async function post(server: RunningServer, body: unknown, authorization: string, t0: number): Promise<Answer> {
  const res = await fetch(`${server.url}/v4/delivery/e-mail/validate`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, at: performance.now() - t0 };
}

const problemType = (answer: Answer) => (answer.body as { type?: string } | undefined)?.type;

/** A raw TCP connection to the server: what it has received so far, and when it closed (performance.now()). */
async function rawSocket(url: URL): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const socket = connect(Number(url.port), url.hostname);
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, received: () => received, closed };
}

describe('the gate (pool.ts FairGate)', () => {
  const claim = (plugin: string, client = 't') => ({ plugin, client, pooled: true });

  it('gives turns round-robin between plugins, then between tokens, within the per-plugin and per-token bounds', async () => {
    const gate = new FairGate({ poolSize: 2, perPlugin: 1, perClient: 1, queuePerPlugin: 10 });
    const order: string[] = [];
    const enter = (name: string, c: ReturnType<typeof claim>) => gate.enter(c).then((ticket) => (order.push(name), ticket));
    const a1 = await enter('a1', claim('A', 'x'));
    const waiting = [enter('a2', claim('A', 'x')), enter('a3', claim('A', 'x')), enter('a4', claim('A', 'y'))];
    const b1 = await enter('b1', claim('B')); // A holds its one turn: B's comes at once
    const b2 = enter('b2', claim('B'));
    expect(gate.stats).toMatchObject({ running: 2, pooled: 2, waiting: 4 });
    a1.leave();
    a1.leave(); // leaving twice is harmless
    const a2 = await waiting[0]!;
    b1.leave();
    const b2t = await b2;
    a2.leave();
    const a4 = await waiting[2]!; // token y's turn before token x's second
    a4.leave();
    (await waiting[1]!).leave();
    b2t.leave();
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2', 'a4', 'a3']);
    expect(gate.stats).toMatchObject({ running: 0, waiting: 0, admitted: 6, clientPeak: 1 });
    expect(gate.stats.plugins.A!.peak).toBe(1);
  });

  it('refuses one more than the queue bound with a BusyError, and lets a waiter whose budget runs out leave without a turn', async () => {
    const gate = new FairGate({ poolSize: 4, perPlugin: 1, perClient: 1, queuePerPlugin: 2 });
    const first = await gate.enter(claim('A'));
    const queued = [gate.enter(claim('A')), gate.enter(claim('A'))];
    await expect(gate.enter(claim('A'))).rejects.toBeInstanceOf(BusyError);
    expect(gate.stats).toMatchObject({ refused: 1, waiting: 2 });
    const expiring = withQueryBudget(30, () => gate.enter(claim('C')).then(() => gate.enter(claim('C'))));
    await expect(expiring).rejects.toMatchObject({ name: 'QueryTimeoutError', queued: true });
    expect(gate.stats).toMatchObject({ expired: 1 });
    first.leave();
    for (const ticket of queued) (await ticket).leave();
    expect(gate.stats).toMatchObject({ waiting: 0 });
    expect(gate.stats.running).toBe(1); // C's first turn, never left in this test
  });

  it('takes a waiter whose client went away out of the queue, without a turn', async () => {
    const gate = new FairGate({ poolSize: 4, perPlugin: 1, perClient: 1, queuePerPlugin: 8 });
    const first = await gate.enter(claim('A'));
    const gone = new AbortController();
    const abandoned = gate.enter(claim('A'), gone.signal);
    const kept = gate.enter(claim('A'));
    expect(gate.stats).toMatchObject({ waiting: 2 });
    gone.abort();
    await expect(abandoned).rejects.toMatchObject({ name: 'ClientGoneError' });
    expect(gate.stats).toMatchObject({ waiting: 1, abandoned: 1 });
    first.leave();
    (await kept).leave();
    // two turns given: the first and the one kept; the abandoned one never ran
    expect(gate.stats).toMatchObject({ admitted: 2, running: 0, waiting: 0 });
    const already = new AbortController();
    already.abort();
    await expect(gate.enter(claim('A'), already.signal)).rejects.toMatchObject({ name: 'ClientGoneError' });
  });

  it("answers every waiter, and every later request, with the drain's error instead of a turn", async () => {
    const gate = new FairGate({ poolSize: 4, perPlugin: 1, perClient: 1, queuePerPlugin: 8 });
    const first = await gate.enter(claim('A'));
    const waiting = [gate.enter(claim('A')), gate.enter(claim('B', 'b'))];
    const second = await waiting[1]!; // B had room
    gate.refuseWaiting(() => new Error('shutting down'));
    await expect(waiting[0]).rejects.toThrow('shutting down');
    await expect(gate.enter(claim('C'))).rejects.toThrow('shutting down');
    first.leave();
    second.leave();
    expect(gate.stats).toMatchObject({ running: 0, waiting: 0, admitted: 2 });
  });

  it("when a plugin's queue is full, the token holding the most waiters gives one up: one token cannot shut out the others", async () => {
    const gate = new FairGate({ poolSize: 4, perPlugin: 1, perClient: 1, queuePerPlugin: 4 });
    const first = await gate.enter(claim('A', 't1'));
    const flood = Array.from({ length: 4 }, () => gate.enter(claim('A', 't1')));
    flood.forEach((p) => p.catch(() => undefined));
    // t1 fills the queue; t2 still gets a place: t1's newest waiter is refused instead
    const other = gate.enter(claim('A', 't2'));
    await expect(flood[3]).rejects.toBeInstanceOf(BusyError);
    expect(gate.stats).toMatchObject({ waiting: 4, refused: 1 });
    // t1 asking for more while the queue is full is refused itself
    await expect(gate.enter(claim('A', 't1'))).rejects.toBeInstanceOf(BusyError);
    // round-robin between the tokens: t2 runs no later than second, not after t1's three
    const served: string[] = [];
    const turns = [
      ...flood.slice(0, 3).map((p) => p.then((t) => (served.push('t1'), t.leave()))),
      other.then((t) => (served.push('t2'), t.leave())),
    ];
    first.leave();
    await Promise.all(turns);
    expect(served.indexOf('t2')).toBeLessThanOrEqual(1);
    expect(gate.stats).toMatchObject({ running: 0, waiting: 0 });
  });
});

describe('the connection pool under a budget', () => {
  it('lets a request whose budget runs out while it waits for a connection leave the queue, without ever getting one', async () => {
    const db = await Database.open();
    const pool = new ConnectionPool(() => db.connect(), 1);
    try {
      const held = await pool.acquire();
      await expect(withQueryBudget(30, () => pool.acquire())).rejects.toMatchObject({ name: 'QueryTimeoutError', queued: true });
      expect(pool.stats).toMatchObject({ waiting: 0, leases: 1 });
      held.release();
      const next = await pool.acquire();
      expect(await next.db.all(sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
      next.release();
      expect(pool.stats).toMatchObject({ leases: 2, lent: 0 });
    } finally {
      pool.close();
      db.close();
    }
  });
});

describe('one plugin cannot slow another within its rate limit (issue 17, point 2)', () => {
  it("serves plugin B's request before plugin A's queue of 16 is drained", async () => {
    // Two pooled connections: today one FIFO queue, where B lands behind all of A's requests.
    const server = await serve({ poolSize: 2, limits: { rateLimitPerMinute: 0 } });
    try {
      const a = await bearer('A');
      const t0 = performance.now();
      const done: string[] = [];
      // One FIFO queue answers B after all 16 of A's (15 still waiting when B asks); a fair one after a few.
      const load = Array.from({ length: 16 }, (_, i) => get(server, ITEMS, a, t0).then((r) => (done.push(`A${i}`), r)));
      // B asks once A's first answer is out: A's other requests are all in the server by then.
      await Promise.race(load);
      const b = await get(server, B_ITEMS, await bearer('B'), t0);
      done.push('B');
      const answers = await Promise.all(load);
      expect(b.status).toBe(200);
      expect((b.body as { conversions: unknown[] }).conversions).toHaveLength(1);
      for (const answer of answers) expect(answer.status).toBe(200);
      // B's turn came at once (A may hold only half the pool): most of A's queue was still waiting.
      const aBeforeB = done.indexOf('B');
      expect(16 - aBeforeB).toBeGreaterThanOrEqual(8);
    } finally {
      await server.close();
    }
  });

  it('runs at most --plugin-concurrency requests of a plugin and --token-concurrency of a token at once, round-robin', async () => {
    const server = await serve({ poolSize: 4, limits: { rateLimitPerMinute: 0, pluginConcurrency: 2, tokenConcurrency: 1 } });
    try {
      const [a1, a2] = [await bearer('A', 1), await bearer('A', 2)];
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => get(server, ITEMS, i % 2 ? a1 : a2, t0)));
      for (const answer of answers) expect(answer.status).toBe(200);
      const { plugins, clientPeak, admitted } = server.app.gate.stats;
      expect(admitted).toBe(12);
      expect(plugins.A).toMatchObject({ running: 0, waiting: 0, admitted: 12 });
      expect(plugins.A!.peak).toBe(2); // two tokens, one each
      expect(clientPeak).toBe(1);
      // The pool lent its connections 12 times, never more than two at once to plugin A.
      expect(server.holder.current.poolStats).toMatchObject({ lent: 0, waiting: 0 });
    } finally {
      await server.close();
    }
  });

  it('answers past the queue bound of a plugin with a 503 busy problem and Retry-After, and keeps serving the other plugin', async () => {
    const server = await serve({ poolSize: 2, limits: { rateLimitPerMinute: 0, pluginConcurrency: 1, pluginQueue: 4 } });
    try {
      const a = await bearer('A');
      const t0 = performance.now();
      const load = Array.from({ length: 16 }, () => get(server, ITEMS, a, t0));
      await sleep(50);
      const b = await get(server, B_ITEMS, await bearer('B'), t0);
      const answers = await Promise.all(load);
      expect(b.status).toBe(200);
      const refused = answers.filter((r) => r.status !== 200);
      // One runs, four wait, the rest are refused at once (more may run if A's first ones are quick
      // on a busy machine; before the bound existed, none was ever refused).
      expect(refused.length).toBeGreaterThanOrEqual(1);
      for (const answer of refused) {
        expect(answer.status).toBe(503);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(problemType(answer)).toBe('urn:convx:problem:busy');
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      expect(server.app.gate.stats.refused).toBe(refused.length);
    } finally {
      await server.close();
    }
  });

  it("gives plugin B's harmless validation a correct answer or a 503 busy, never a false render_limit_exceeded, while hostile validations of A run", async () => {
    const server = await serve({
      limits: { rateLimitPerMinute: 0, queryTimeoutMs: 10_000 },
      // B's validation runs 6 tiny jobs (3 parse checks, 3 renders of its one sample): its renders
      // take far less than 500 ms, what it waits for (SQL, a renderer) may well take more.
      renderLimits: { ...DEFAULT_RENDER_LIMITS, renderTimeMs: 1000, requestTimeMs: 500 },
    });
    try {
      const a = await bearer('A');
      const t0 = performance.now();
      // Each selects 50,000 contacts (SQL that keeps DuckDB's threads busy), then renders loops that hit the render limit.
      const hostileBody = { audience: { lists: ['big'] }, assets: ['cs', 'en'].map((language) => ({ language, subject: NESTED_LOOP, html: HTML, text: 'Hi' })) };
      // Two per renderer: each holds one for its validation time limit (500 ms), 1 s of renders in all.
      const hostile = Array.from({ length: 2 * MAX_RENDER_WORKERS }, () => post(server, hostileBody, a, t0));
      await sleep(500);
      const harmless = { audience: { lists: ['l'] }, assets: [{ subject: 'Hi {{ contact.firstName }}', html: HTML, text: 'Hi' }] };
      const b = await post(server, harmless, await bearer('B'), t0);
      if (b.status === 200) {
        const body = b.body as ValidateResponse;
        expect(body.render.errors).toEqual([]);
        expect(body.render.samples.map((s) => s.subject)).toEqual(['Hi Bob']);
      } else {
        expect(b.status).toBe(503);
        expect(problemType(b)).toBe('urn:convx:problem:busy');
        expect(b.headers.get('retry-after')).toMatch(/^\d+$/);
      }
      // A's own validations: each a finding of its own render limit, or a 503 once its budget ran out waiting.
      const answers = await Promise.all(hostile);
      // B ran while A's load did: A's last answer came after B's.
      expect(Math.max(...answers.map((r) => r.at))).toBeGreaterThan(b.at);
      for (const answer of answers) {
        if (answer.status === 200) {
          const limits = (answer.body as ValidateResponse).render.errors.filter((f) => f.code === 'render_limit_exceeded');
          expect(limits.length).toBeGreaterThan(0);
          for (const finding of limits) expect(finding.message).toMatch(/--render-time-limit|--validation-time-limit/);
          expect(limits.map((f) => f.message).join('\n')).not.toMatch(/busy/);
        } else {
          expect(answer.status).toBe(503);
          expect(['urn:convx:problem:busy', 'urn:convx:problem:query-timeout']).toContain(problemType(answer));
        }
      }
    } finally {
      await server.close();
    }
  });
});

describe('the query budget bounds the whole request (issue 17, point 3)', () => {
  it('answers 16 parallel slow validations within the budget and a margin; the queued ones leave the queue without running', async () => {
    // 400 ms: with 250 a validation admitted late could spend its budget waiting for a renderer (a busy 503, not this test's point).
    const budgetMs = 400;
    const server = await serve({ poolSize: 2, limits: { rateLimitPerMinute: 0, queryTimeoutMs: budgetMs } });
    try {
      const a = await bearer('A');
      // 50,000 ids: about half a second of SQL each, more than the budget.
      const body = { audience: { contactIds: Array.from({ length: A_CONTACTS }, (_, i) => `c${i}`) }, assets: [{ subject: 'Hi', html: HTML, text: 'Hi' }] };
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: 16 }, () => post(server, body, a, t0)));
      const late = Math.max(...answers.map((r) => r.at));
      // Before: 5-14 s, as queued queries ran in full. The budget, plus sending 16 bodies of 600 kB and a wide margin (a busy machine).
      expect(late).toBeLessThan(budgetMs + 4000);
      const timedOut = answers.filter((r) => r.status === 503);
      expect(timedOut.length).toBeGreaterThanOrEqual(14);
      const { admitted, expired, plugins } = server.app.gate.stats;
      // The budget's 503, but for a validation admitted whose SQL ended within the budget on a busy
      // machine and which then spent the rest waiting for a renderer (a busy 503, not this test's point):
      // only an admitted one can be that, never one that waited in the queue.
      const busy = timedOut.filter((r) => problemType(r) === 'urn:convx:problem:busy');
      expect(busy.length).toBeLessThanOrEqual(admitted);
      for (const answer of timedOut.filter((r) => !busy.includes(r))) {
        expect(problemType(answer)).toBe('urn:convx:problem:query-timeout');
        expect(answer.headers.get('retry-after')).toBe('5');
      }
      // One validation of A at a time (half of a pool of 2): the others waited, each admitted or gone at its budget.
      // How many of them leave the queue without a turn depends on the machine: a turn that comes with a few ms
      // of budget left runs, and is interrupted at once (the next test makes them leave by construction).
      expect(plugins.A!.peak).toBe(1);
      expect(admitted + expired).toBe(16);
      expect(server.holder.current.requestsInFlight).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('lets validations waiting behind their plugin\'s turn leave the queue at their budget, without a turn or a connection', async () => {
    const budgetMs = 300;
    const server = await serve({ poolSize: 2, limits: { rateLimitPerMinute: 0, queryTimeoutMs: budgetMs } });
    try {
      const a = await bearer('A');
      const b = await bearer('B');
      const body = { audience: { contactIds: ['c1'] }, assets: [{ subject: 'Hi', html: HTML, text: 'Hi' }] };
      const forB = { ...body, audience: { contactIds: ['b1'] } };
      // Validations of B warm the server up (the first render starts a worker, which on a cold process may take longer than
      // the budget), so that B's below answers well within it.
      let warm = 0;
      while ((await post(server, forB, b, performance.now())).status !== 200) expect(++warm).toBeLessThan(5);
      // A's one turn (half of a pool of 2) held for the whole test, as a request of A would hold it.
      const held = await server.app.gate.enter({ plugin: 'A', client: 'another token', pooled: true });
      const leases = server.holder.current.poolStats.leases;
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: 3 }, () => post(server, body, a, t0)));
      held.leave();
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(problemType(answer)).toBe('urn:convx:problem:query-timeout');
        expect(answer.headers.get('retry-after')).toBe('5');
        expect(answer.at).toBeGreaterThanOrEqual(budgetMs - 50);
        expect(answer.at).toBeLessThan(budgetMs + 4000);
      }
      expect(server.app.gate.stats).toMatchObject({ admitted: 2 + warm, expired: 3, waiting: 0 });
      expect(server.holder.current.poolStats.leases).toBe(leases);
      // B is answered after: the queue of A held nothing of B's.
      expect((await post(server, forB, b, t0)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('never lends a connection to a request whose budget is spent while it waits: the pool lends only what the gate admits', async () => {
    const server = await serve({ poolSize: 2, limits: { rateLimitPerMinute: 0, queryTimeoutMs: 150, pluginConcurrency: 1 } });
    try {
      const a = await bearer('A');
      const before = server.holder.current.poolStats.leases;
      const t0 = performance.now();
      const slow = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&limit=1000&sort=-conversionsAmount&offset=';
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => get(server, `${slow}${i}`, a, t0)));
      expect(Math.max(...answers.map((r) => r.at))).toBeLessThan(150 + 4000);
      const { admitted, expired } = server.app.gate.stats;
      expect(admitted + expired).toBe(16);
      // Each answered request had a connection, and none but the admitted ones did (an admitted one may still
      // find the pool's connections busy ending interrupted queries, and its budget run out there: no lease).
      const leases = server.holder.current.poolStats.leases - before;
      expect(leases).toBeLessThanOrEqual(admitted);
      expect(leases).toBeGreaterThanOrEqual(answers.filter((r) => r.status === 200).length);
      for (const answer of answers.filter((r) => r.status !== 200)) expect(problemType(answer)).toBe('urn:convx:problem:query-timeout');
      expect(answers.filter((r) => r.status === 503).length).toBeGreaterThanOrEqual(expired);
    } finally {
      await server.close();
    }
  });
  it("cuts a render at its request's budget, so another plugin's validation waits for a renderer at most that long, and is never charged for it", async () => {
    // A's renders may run 4 s, eight times the budget: only the budget can cut them by B's deadline.
    const budgetMs = 500;
    const server = await serve({
      limits: { rateLimitPerMinute: 0, queryTimeoutMs: budgetMs },
      renderLimits: { ...DEFAULT_RENDER_LIMITS, renderTimeMs: 4000, requestTimeMs: 10_000 },
    });
    try {
      const a = await bearer('A');
      const harmless = { audience: { lists: ['l'] }, assets: [{ subject: 'Hi {{ contact.firstName }}', html: HTML, text: 'Hi' }] };
      // Renderers started and the data warm: within the budget A's validations get to their renders.
      await Promise.all(Array.from({ length: MAX_RENDER_WORKERS }, () => post(server, harmless, a, 0)));
      const t0 = performance.now();
      // As many of A's validations as there are renderers, each rendering a loop for up to 4 s.
      const hostile = Array.from({ length: MAX_RENDER_WORKERS }, () =>
        post(server, { audience: { lists: ['l'] }, assets: [{ subject: NESTED_LOOP, html: HTML, text: 'Hi' }] }, a, t0),
      );
      await sleep(budgetMs / 2);
      const b = await post(server, harmless, await bearer('B'), performance.now());
      // Today A's renders ran their 4 s whatever the budget, and B waited for them.
      expect(b.at).toBeLessThan(budgetMs + 1500);
      if (b.status === 200) {
        expect((b.body as ValidateResponse).render.errors).toEqual([]);
        expect((b.body as ValidateResponse).render.samples.map((s) => s.subject)).toEqual(['Hi Bob']);
      } else {
        expect(problemType(b)).toBe('urn:convx:problem:busy');
        expect(b.headers.get('retry-after')).toBe('5');
      }
      // A's renders were cut when A's budget ran out: the budget's 503, not a finding about the template.
      // (One of A's still in its checks when B came waits behind B's turn, and is busy when its budget ends.)
      const answers = await Promise.all(hostile);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(['urn:convx:problem:query-timeout', 'urn:convx:problem:busy']).toContain(problemType(answer));
        expect(answer.at).toBeLessThan(budgetMs + 1500);
      }
      const cut = answers.filter((answer) => /during its template renders/.test((answer.body as { detail?: string }).detail ?? ''));
      expect(cut.length).toBeGreaterThanOrEqual(1);
      for (const answer of cut) expect(problemType(answer)).toBe('urn:convx:problem:query-timeout');
    } finally {
      await server.close();
    }
  });
});

describe('a body that never completes (issue 17, point 4)', () => {
  let server: Awaited<ReturnType<typeof serveInProcess>> | undefined;
  let url: URL;
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  beforeAll(async () => {
    // Plugins A and B with one order each: no request here gets past its body to the data.
    const small = dataset(twoPluginFiles());
    server = await serveInProcess(['--data', small, '--port', '0', '--body-timeout', '0.25'], { CONVX_JWT_SECRET: SECRET });
    url = new URL(server.url);
  }, 40_000);

  it('answers Content-Length: 1000 and then silence with a 408 problem and closes the connection within the body timeout', async () => {
    const authorization = await bearer('A');
    const { socket, received, closed } = await rawSocket(url);
    const sent = performance.now();
    socket.write(
      [
        'POST /v4/delivery/e-mail/validate HTTP/1.1',
        `Host: ${url.host}`,
        `Authorization: ${authorization}`,
        'Content-Type: application/json',
        'Content-Length: 1000',
        '',
        '{"audience":',
      ].join('\r\n'),
    );
    const at = await Promise.race([closed, sleep(8000).then(() => undefined)]);
    socket.destroy();
    expect(at, `still open after 8 s; received: ${received()}`).toBeDefined();
    expect(at! - sent).toBeLessThan(250 + 2500);
    const [head, body] = received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 /);
    expect(head).toMatch(/\r\nContent-Type: application\/problem\+json/i);
    expect(head).toMatch(/\r\nConnection: close/i);
    expect(JSON.parse(body!)).toMatchObject({ type: 'urn:convx:problem:request-timeout', status: 408 });
    // The server goes on answering.
    const health = await fetch(new URL('/healthz', url));
    expect(health.status).toBe(200);
  });

  it('answers headers that never end with the same 408 within the body timeout', async () => {
    const { socket, received, closed } = await rawSocket(url);
    const sent = performance.now();
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\nX-Slow: 1`);
    const at = await Promise.race([closed, sleep(8000).then(() => undefined)]);
    socket.destroy();
    expect(at, `still open after 8 s; received: ${received()}`).toBeDefined();
    expect(at! - sent).toBeLessThan(250 + 2500);
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(received()).toContain('urn:convx:problem:request-timeout');
  });

  it('lists the new options with their defaults in convx serve --help', async () => {
    const help = (await cli(['serve', '--help'])).stdout;
    for (const flag of ['--body-timeout <seconds>', '--plugin-concurrency <n>', '--token-concurrency <n>', '--plugin-queue <n>']) expect(help).toContain(flag);
    expect(help).toMatch(/--body-timeout <seconds>[\s\S]*default: "30"/);
    expect((await cli(['serve', '--plugin-concurrency', '0'])).code).toBe(2);
    expect((await cli(['serve', '--body-timeout', 'soon'])).code).toBe(2);
  });
});
