/**
 * convx serve's connection pool and ETags (issue 10): requests share a small,
 * bounded pool of DuckDB connections; concurrency changes no answer; a query
 * interrupted by the time budget leaves the pool healthy; report and items
 * answers carry an ETag of the data version, plugin and request, answered 304
 * on If-None-Match, and a reload of changed files changes every tag (one of
 * unchanged files keeps them: the data version is a hash of the files).
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, openConnectionCount, QueryTimeoutError, withQueryBudget } from '../src/local/db.js';
import { parseReportQuery } from '../src/model/query.js';
import { buildApp, type AppOptions } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ConnectionPool } from '../src/server/pool.js';
import { DatasetHolder, ServedDataset } from '../src/server/plugins.js';
import { dataset, SAMPLES, tempDir, twoPluginFiles } from './helpers.js';
import { sql } from '../src/local/sql.js';

const SECRET = 'test-secret-that-is-long-enough';
const NOW = new Date('2024-05-01T12:00:00Z');
const REPORT = '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-04-30';
const ITEMS = '/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30';
const LONG_QUERY = sql`SELECT sum(i) FROM range(100000000000) t(i)`;

const bearer = async (plugin = 'shop') => ({ authorization: `Bearer ${await signDevelopmentToken(SECRET, plugin, '1h')}` });

async function appWith(dataset: () => ServedDataset, extra: Partial<AppOptions> = {}) {
  return buildApp({ dataset, verify: createVerifier({ secret: SECRET }), log: () => undefined, now: () => NOW, version: 'test', ...extra });
}

/** Distinct report and items URLs over the samples: every one asks something else. */
function urls(): string[] {
  const out: string[] = [];
  for (const [from, to] of [
    ['2024-01-01', '2024-01-31'],
    ['2024-02-01', '2024-02-29'],
    ['2024-03-01', '2024-03-31'],
    ['2024-01-15', '2024-04-15'],
    ['2024-01-01', '2024-04-30'],
  ]) {
    out.push(`/v1/conversions?dateFrom=${from}&dateTo=${to}`);
    out.push(`/v1/conversions?dateFrom=${from}&dateTo=${to}&sort=name&limit=3`);
    out.push(`/v1/conversions/items?dateFrom=${from}&dateTo=${to}&limit=7`);
    out.push(`/v1/conversions/items?dateFrom=${from}&dateTo=${to}&sort=-conversionsAmount&offset=2`);
  }
  out.push('/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-04-30&orderId=o-1');
  return out;
}

describe('the connection pool', () => {
  let served: ServedDataset;
  beforeAll(async () => {
    served = await ServedDataset.load(SAMPLES, { poolSize: 2 });
  });
  afterAll(async () => {
    await served.retire();
  });

  it('serves concurrent requests on at most poolSize connections, reused, with the same bodies as one by one', async () => {
    const app = await appWith(() => served);
    try {
      const headers = await bearer();
      const list = urls();
      const sequential: string[] = [];
      for (const url of list) {
        const res = await app.inject({ method: 'GET', url, headers });
        expect(res.statusCode, res.body).toBe(200);
        sequential.push(res.body);
      }
      const before = served.poolStats;
      // three rounds of every URL at once: far more requests than connections
      const concurrent = await Promise.all([...list, ...list, ...list].map((url) => app.inject({ method: 'GET', url, headers })));
      concurrent.forEach((res, i) => {
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(sequential[i % list.length]);
      });
      const after = served.poolStats;
      expect(after.size).toBe(2);
      expect(after.opened).toBeLessThanOrEqual(2);
      expect(after.open).toBeLessThanOrEqual(2);
      expect(after.leases - before.leases).toBe(3 * list.length);
      expect(after.lent).toBe(0);
      expect(after.waiting).toBe(0);
      expect(after.replaced).toBe(0);
      expect(served.requestsInFlight).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('never lends more connections than its size: the next request waits for one given back, first come first served', async () => {
    const db = await Database.open();
    const pool = new ConnectionPool(() => db.connect(), 2);
    try {
      const a = await pool.acquire();
      const b = await pool.acquire();
      const order: string[] = [];
      const c = pool.acquire().then((lease) => (order.push('c'), lease));
      const d = pool.acquire().then((lease) => (order.push('d'), lease));
      await new Promise((r) => setTimeout(r, 20));
      expect(pool.stats).toMatchObject({ open: 2, lent: 2, waiting: 2 });
      a.release();
      a.release(); // giving back twice is harmless
      const third = await c;
      expect(await third.db.all(sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
      b.db.close(); // closing the lent Database gives it back too, without closing the connection
      const fourth = await d;
      expect(order).toEqual(['c', 'd']);
      expect(await fourth.db.all(sql`SELECT 2 AS two`)).toEqual([{ two: 2 }]);
      expect(pool.stats).toMatchObject({ open: 2, lent: 2, waiting: 0, opened: 2 });
      third.release();
      fourth.release();
      expect(pool.stats).toMatchObject({ open: 2, idle: 2, lent: 0 });
    } finally {
      pool.close();
      db.close();
    }
  });

  it('replaces a connection interrupted by the query time budget, and the pool keeps serving', async () => {
    const before = openConnectionCount();
    const db = await Database.open();
    const pool = new ConnectionPool(() => db.connect(), 1);
    try {
      const lease = await pool.acquire();
      await expect(withQueryBudget(50, () => lease.db.all(LONG_QUERY))).rejects.toBeInstanceOf(QueryTimeoutError);
      lease.release();
      // The interrupted query keeps its connection's place until it has ended: never more than size open.
      expect(pool.stats.open).toBeLessThanOrEqual(1);
      await pool.settled();
      expect(pool.stats).toMatchObject({ replaced: 1, open: 0 });
      const next = await pool.acquire();
      expect(await next.db.all(sql`SELECT 42 AS x`)).toEqual([{ x: 42 }]);
      expect(pool.stats).toMatchObject({ opened: 2, open: 1 });
      next.release();
      // a waiter behind an interrupted connection gets a fresh one
      const first = await pool.acquire();
      const waiting = pool.acquire();
      first.discard();
      first.release();
      const fresh = await waiting;
      expect(await fresh.db.all(sql`SELECT 7 AS x`)).toEqual([{ x: 7 }]);
      fresh.release();
      expect(pool.stats).toMatchObject({ replaced: 2, open: 1, lent: 0 });
    } finally {
      pool.close();
      await pool.settled();
      db.close();
    }
    // every connection closed, those a lent view closed once its interrupted query ended too: none left for an exit to interrupt
    expect(openConnectionCount()).toBe(before);
  });

  it('fails a request whose connection cannot be opened, without leaving the ones behind it waiting forever', async () => {
    const db = await Database.open();
    let failures = 2;
    const pool = new ConnectionPool(async () => {
      if (failures-- > 0) throw new Error('cannot connect');
      return db.connect();
    }, 1);
    try {
      const results = await Promise.allSettled([pool.acquire(), pool.acquire(), pool.acquire()]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
      const lease = (results[2] as PromiseFulfilledResult<Awaited<ReturnType<typeof pool.acquire>>>).value;
      expect(await lease.db.all(sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
      lease.release();
      expect(pool.stats).toMatchObject({ open: 1, idle: 1, waiting: 0 });
    } finally {
      pool.close();
      db.close();
    }
  });

  it('answers 503 to requests over a tiny budget on a one-connection pool without lending a connection, then answers the same bodies as before', async () => {
    const one = await ServedDataset.load(SAMPLES, { poolSize: 1 });
    // A budget spent before the first query starts: a report on the samples, from reused prepared
    // statements and per-day sums, may well finish within a whole millisecond. (Interrupting a
    // running query is the test above.) The budget runs from the request's arrival (issue 17), so
    // it is spent before the request's turn: no connection is lent, no query runs.
    const tiny = await appWith(() => one, { limits: { queryTimeoutMs: 0.001 } });
    const normal = await appWith(() => one);
    try {
      const headers = await bearer();
      const expected = await normal.inject({ method: 'GET', url: REPORT, headers });
      expect(expected.statusCode).toBe(200);
      const leases = one.poolStats.leases;
      const failed = await Promise.all(
        Array.from({ length: 6 }, (_, i) => tiny.inject({ method: 'GET', url: i % 2 ? REPORT : ITEMS, headers })),
      );
      for (const res of failed) expect(res.statusCode).toBe(503);
      expect(one.poolStats.leases).toBe(leases);
      expect(tiny.gate.stats.admitted).toBe(0);
      expect(one.poolStats.lent).toBe(0);
      const again = await Promise.all([1, 2, 3].map(() => normal.inject({ method: 'GET', url: REPORT, headers })));
      for (const res of again) expect(res.body).toBe(expected.body);
      expect(one.poolStats.open).toBeLessThanOrEqual(1);
      expect(one.requestsInFlight).toBe(0);
    } finally {
      await tiny.close();
      await normal.close();
      await one.retire();
    }
  });

  it('closes its connections when the dataset retires, only after the requests holding one finish', async () => {
    const local = await ServedDataset.load(SAMPLES, { poolSize: 2 });
    const backend = await local.backend('shop');
    let retired = false;
    const retiring = local.retire().then(() => (retired = true));
    await new Promise((r) => setTimeout(r, 30));
    expect(retired).toBe(false);
    // the request in flight still queries on its connection
    const page = await backend.report(parseReportQuery({ dateFrom: '2024-01-01', dateTo: '2024-04-30' }, NOW));
    expect(page.paging.totalCount).toBe(16);
    await backend.close();
    await retiring;
    expect(retired).toBe(true);
    expect(local.poolStats).toMatchObject({ open: 0, lent: 0 });
  });
});

describe('prepared statements kept per connection', () => {
  it('reuses them with new values, drops the least recently used past the limit, and answers alike throughout', async () => {
    const db = await Database.open();
    try {
      db.keepStatements(2);
      const sqls = [(v: number) => sql`SELECT ${v} + 1 AS x`, (v: number) => sql`SELECT ${v} * 2 AS x`, (v: number) => sql`SELECT ${v} - 3 AS x`];
      const expected = (i: number, v: number) => [v + 1, v * 2, v - 3][i];
      // three shapes through a cache of two, each asked again with other values: every answer is its own
      for (let round = 0; round < 3; round++) {
        for (const [i, query] of sqls.entries()) {
          const v = round * 10 + i;
          expect(await db.all(query(v))).toEqual([{ x: expected(i, v) }]);
        }
      }
      expect((db as unknown as { statements: Map<string, unknown> }).statements.size).toBe(2);
    } finally {
      db.close();
    }
  });
});

describe('ETag and If-None-Match', () => {
  it('tags report and items answers, answers 304 to a matching If-None-Match without a body, and 200 otherwise', async () => {
    const served = await ServedDataset.load(SAMPLES);
    const app = await appWith(() => served);
    try {
      const headers = await bearer();
      for (const url of [REPORT, ITEMS]) {
        const first = await app.inject({ method: 'GET', url, headers });
        expect(first.statusCode).toBe(200);
        const tag = first.headers.etag as string;
        expect(tag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
        const again = await app.inject({ method: 'GET', url, headers });
        expect(again.headers.etag).toBe(tag);
        expect(again.body).toBe(first.body);

        for (const inm of [tag, `W/${tag}`, `"other", ${tag}`, '*']) {
          const cached = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': inm } });
          expect(cached.statusCode, inm).toBe(304);
          expect(cached.body).toBe('');
          expect(cached.headers.etag).toBe(tag);
        }
        const stale = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': '"not-this-one"' } });
        expect(stale.statusCode).toBe(200);
        expect(stale.body).toBe(first.body);
      }
      // another request has another tag
      const a = await app.inject({ method: 'GET', url: REPORT, headers });
      const b = await app.inject({ method: 'GET', url: `${REPORT}&limit=3`, headers });
      expect(a.headers.etag).not.toBe(b.headers.etag);
      // no tag on a failure, and a tag never turns a failure into a 304
      const bad = await app.inject({ method: 'GET', url: '/v1/conversions?dateFrom=nope', headers: { ...headers, 'if-none-match': '*' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.headers.etag).toBeUndefined();
      const anonymous = await app.inject({ method: 'GET', url: REPORT, headers: { 'if-none-match': a.headers.etag as string } });
      expect([401, 403]).toContain(anonymous.statusCode);
    } finally {
      await app.close();
      await served.retire();
    }
  });

  it('gives each plugin its own tags for the same URL', async () => {
    const served = await ServedDataset.load(dataset(twoPluginFiles()));
    const app = await appWith(() => served);
    try {
      const url = '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31';
      const a = await app.inject({ method: 'GET', url, headers: await bearer('A') });
      const b = await app.inject({ method: 'GET', url, headers: await bearer('B') });
      expect(a.statusCode).toBe(200);
      expect(b.statusCode).toBe(200);
      expect(a.headers.etag).not.toBe(b.headers.etag);
      const crossed = await app.inject({ method: 'GET', url, headers: { ...(await bearer('B')), 'if-none-match': a.headers.etag as string } });
      expect(crossed.statusCode).toBe(200);
      expect(crossed.body).toBe(b.body);
    } finally {
      await app.close();
      await served.retire();
    }
  });

  it('keeps every tag across a reload of unchanged files (the version is a hash of the files), and changes them with the files', async () => {
    const dir = tempDir();
    cpSync(SAMPLES, dir, { recursive: true });
    const holder = new DatasetHolder(await ServedDataset.load(dir), {});
    const app = await appWith(() => holder.current);
    try {
      const headers = await bearer();
      const before = await app.inject({ method: 'GET', url: REPORT, headers });
      const tag = before.headers.etag as string;
      await holder.reload();
      const same = await app.inject({ method: 'GET', url: REPORT, headers: { ...headers, 'if-none-match': tag } });
      expect(same.statusCode).toBe(304);
      expect(same.headers.etag).toBe(tag);
      // changed files: a new tag and the new answer
      const orders = join(dir, 'orders.csv');
      const [header, ...lines] = readFileSync(orders, 'utf8').trimEnd().split('\n');
      writeFileSync(orders, `${[header, ...lines.slice(0, Math.ceil(lines.length / 2))].join('\n')}\n`);
      await holder.reload();
      const changed = await app.inject({ method: 'GET', url: REPORT, headers: { ...headers, 'if-none-match': same.headers.etag as string } });
      expect(changed.statusCode).toBe(200);
      expect(JSON.parse(changed.body).conversions).not.toEqual(JSON.parse(before.body).conversions);
      expect(changed.headers.etag).not.toBe(tag);
    } finally {
      await app.close();
      await holder.close();
    }
  });
});
