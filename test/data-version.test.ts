/**
 * Data versions (issue 17, point 1): every report and items answer names the version of the data
 * it came from (Convx-Data-Version, paging.dataVersion), a function of the files that local mode
 * and `convx serve` compute alike; a request pinned to a version is answered from it while the
 * server holds it (the grace period after a reload), else refused with a 412 problem; and
 * `convx items --all` in API mode pins every page to the first page's version, so that a reload
 * in the middle of paging never mixes two versions (exit 5 when the old one is gone).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { dataVersion, filesIdentity } from '../src/local/open.js';
import type { Paging } from '../src/model/types.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, csv, dataset, ORDER_HEADER, tempDir, TOUCH_HEADER } from './helpers.js';

const SECRET = 'data-version-secret';
const PERIOD = ['--from', '2024-03-01', '--to', '2024-03-31'];
const ITEMS = '/v1/conversions/items?dateFrom=2024-03-01&dateTo=2024-03-31';

/** Order i of a contact who clicked campaign k1 once, i minutes after 01:00 on 1 March 2024. */
const order = (i: number) => {
  const at = new Date(Date.UTC(2024, 2, 1, 1, 0) + i * 60_000).toISOString().replace('.000Z', 'Z');
  return [`o${i}`, 'c1', at, 'EUR', '10.00', `${(12 + i / 100).toFixed(2)}`, 'CZ', false, 'completed'];
};
const ordersCsv = (from: number, to: number) => csv(ORDER_HEADER, Array.from({ length: to - from + 1 }, (_, k) => order(from + k)));

/** A dataset of `n` conversions (o1..on), one click before them all. */
function shopOf(n: number): string {
  return dataset({
    'orders.csv': ordersCsv(1, n),
    'touches.csv': csv(TOUCH_HEADER, [['c1', '2024-03-01T00:30:00Z', 'click', 'campaign', 'k1']]),
  });
}

/**
 * The same number of conversions, shifted by one: the oldest order gone, a newer one than all
 * added. Paging newest first (the default sort) across this change without a version would print
 * one record twice and lose another, with the same totalCount.
 */
function shift(dir: string, n: number): void {
  writeFileSync(join(dir, 'orders.csv'), ordersCsv(2, n + 1));
}

const servers: RunningServer[] = [];
const others: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(others.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function serve(dir: string, versionGraceSeconds?: number): Promise<RunningServer> {
  const server = await startServer({
    dir,
    host: '127.0.0.1',
    port: 0,
    auth: { secret: SECRET },
    log: () => undefined,
    version: 'test',
    ...(versionGraceSeconds !== undefined ? { versionGraceSeconds } : {}),
  });
  servers.push(server);
  return server;
}

const bearer = async () => ({ authorization: `Bearer ${await signDevelopmentToken(SECRET, 'default', '1h')}` });

async function get(server: RunningServer, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, { headers: { ...(await bearer()), ...headers } });
  const text = await res.text();
  return { status: res.status, version: res.headers.get('convx-data-version'), etag: res.headers.get('etag'), text, body: text ? JSON.parse(text) : undefined };
}

async function localJson(dir: string, argv: string[] = []): Promise<{ paging: Paging; conversions: unknown[] }> {
  const run = await cli(['items', ...PERIOD, '-o', 'json', ...argv, '--data', dir]);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

async function api(server: { url: string }, argv: string[]) {
  return cli([...argv, '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: await signDevelopmentToken(SECRET, 'default', '1h') } });
}

describe('the data version', () => {
  it('is typed as an optional field of paging (a server that names none still answers)', () => {
    expectTypeOf<Paging>().toEqualTypeOf<{ start: number; count: number; totalCount: number; dataVersion?: string }>();
  });

  it('is the same in local mode and convx serve on the same files, in the header and in paging, and -o json prints the same in both modes', async () => {
    const dir = shopOf(5);
    const local = await localJson(dir, ['--limit', '2']);
    expect(local.paging.dataVersion).toMatch(/^[A-Za-z0-9_-]{16,22}$/);
    const server = await serve(dir);
    expect(server.holder.current.version).toBe(local.paging.dataVersion);
    for (const path of [`${ITEMS}&limit=2`, '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31', '/v1/campaigns/k1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31']) {
      const answer = await get(server, path);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.version).toBe(local.paging.dataVersion);
      expect(answer.body.paging.dataVersion).toBe(local.paging.dataVersion);
      // a 304 names the version too
      const cached = await get(server, path, { 'if-none-match': answer.etag! });
      expect(cached.status).toBe(304);
      expect(cached.version).toBe(local.paging.dataVersion);
    }
    for (const argv of [['items', ...PERIOD, '--limit', '2', '-o', 'json'], ['items', ...PERIOD, '--all', '-o', 'json'], ['report', ...PERIOD, '--all', '-o', 'json']]) {
      const viaApi = await api(server, argv);
      const viaFiles = await cli([...argv, '--data', dir]);
      expect(viaApi.code, viaApi.stderr).toBe(0);
      expect(viaApi.stdout).toBe(viaFiles.stdout);
      expect(JSON.parse(viaApi.stdout).paging.dataVersion).toBe(local.paging.dataVersion);
    }
  });

  it('a reload of unchanged files keeps the version and the ETags; a changed file changes both, in local mode too', async () => {
    const dir = shopOf(5);
    const server = await serve(dir);
    const before = await get(server, ITEMS);
    await server.reload();
    const same = await get(server, ITEMS, { 'if-none-match': before.etag! });
    expect(server.holder.generation).toBe(2);
    expect(same.status).toBe(304);
    expect(same.version).toBe(before.version);
    shift(dir, 5);
    await server.reload();
    const changed = await get(server, ITEMS, { 'if-none-match': before.etag! });
    expect(changed.status).toBe(200);
    expect(changed.version).not.toBe(before.version);
    expect(changed.etag).not.toBe(before.etag);
    expect((await localJson(dir)).paging.dataVersion).toBe(changed.version);
  });

  it('depends on the files and the reference currency asked, not on where the dataset is named from', () => {
    const dir = shopOf(3);
    const identity = filesIdentity(dir);
    expect(filesIdentity(`${dir}/`)).toBe(identity);
    expect(dataVersion(identity)).toBe(dataVersion(filesIdentity(dir)));
    expect(dataVersion(identity, { referenceCurrency: 'czk' })).toBe(dataVersion(identity, { referenceCurrency: 'CZK' }));
    expect(dataVersion(identity, { referenceCurrency: 'CZK' })).not.toBe(dataVersion(identity));
    writeFileSync(join(dir, 'orders.csv'), ordersCsv(1, 3)); // the same bytes written again: a new modification time
    expect(dataVersion(filesIdentity(dir))).not.toBe(dataVersion(identity));
  });

  it('of an imported .duckdb file is the same in local mode and convx serve', async () => {
    const dir = shopOf(4);
    const file = join(tempDir(), 'shop.duckdb');
    const imported = await cli(['data', 'import', dir, '--into', file]);
    expect(imported.code, imported.stderr).toBe(0);
    const local = await localJson(file);
    expect(local.paging.dataVersion).toBeDefined();
    expect(local.paging.dataVersion).not.toBe((await localJson(dir)).paging.dataVersion);
    const server = await serve(file);
    expect((await get(server, ITEMS)).version).toBe(local.paging.dataVersion);
  });
});

describe('pinning a request to a data version (Convx-Data-Version)', () => {
  it('within the grace period, a request pinned to the version a reload replaced is answered from that data; the next reload lets it go', async () => {
    const dir = shopOf(6);
    const server = await serve(dir, 60);
    const old = await get(server, `${ITEMS}&limit=2&offset=2`);
    const v1 = old.version!;
    shift(dir, 6);
    await server.reload();
    const now = await get(server, `${ITEMS}&limit=2&offset=2`);
    const v2 = now.version!;
    expect(v2).not.toBe(v1);
    expect(now.text).not.toBe(old.text);
    // pinned to the old version: the old answer, byte for byte, and its ETag (a 304 on it)
    const pinned = await get(server, `${ITEMS}&limit=2&offset=2`, { 'convx-data-version': v1 });
    expect(pinned.status).toBe(200);
    expect(pinned.version).toBe(v1);
    expect(pinned.text).toBe(old.text);
    expect(pinned.etag).toBe(old.etag);
    const revalidated = await get(server, `${ITEMS}&limit=2&offset=2`, { 'convx-data-version': v1, 'if-none-match': old.etag! });
    expect(revalidated.status).toBe(304);
    expect(revalidated.version).toBe(v1);
    // pinned to the current version: the current answer
    expect((await get(server, `${ITEMS}&limit=2&offset=2`, { 'convx-data-version': v2 })).text).toBe(now.text);
    expect(server.holder.versions).toEqual([v2, v1]);
    // The next reload lets v1 go (two datasets at most): v1 is refused, v2 is kept.
    writeFileSync(join(dir, 'orders.csv'), ordersCsv(3, 8));
    await server.reload();
    expect(server.holder.versions).toEqual([server.holder.current.version, v2]);
    expect((await get(server, ITEMS, { 'convx-data-version': v1 })).status).toBe(412);
    expect((await get(server, ITEMS, { 'convx-data-version': v2 })).status).toBe(200);
  });

  it('after the grace period, and with --version-grace 0 at once, a pinned request is a 412 problem naming both versions', async () => {
    const dir = shopOf(6);
    const server = await serve(dir, 2);
    const v1 = (await get(server, ITEMS)).version!;
    shift(dir, 6);
    // The grace timer (2 s) the reload starts runs on a fake clock, moved on past it below.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await server.reload();
      const v2 = server.holder.current.version;
      expect((await get(server, ITEMS, { 'convx-data-version': v1 })).status).toBe(200);
      vi.advanceTimersByTime(1999);
      expect(server.holder.versions).toEqual([v2, v1]);
      vi.advanceTimersByTime(1);
    } finally {
      vi.useRealTimers();
    }
    const v2 = server.holder.current.version;
    expect(server.holder.versions).toEqual([v2]);
    const refused = await get(server, ITEMS, { 'convx-data-version': v1 });
    expect(refused.status).toBe(412);
    expect(refused.version).toBe(v2);
    expect(refused.body).toEqual({
      type: 'urn:convx:problem:data-version-changed',
      title: 'Data version not served',
      status: 412,
      detail: expect.stringMatching(new RegExp(`version "${v1}".*no longer served.*version "${v2}".*start paging again`)),
      requestedVersion: v1,
      currentVersion: v2,
    });

    const none = await serve(shopOf(6), 0);
    const w1 = (await get(none, ITEMS)).version!;
    writeFileSync(join(none.holder.current.dir, 'orders.csv'), ordersCsv(1, 3));
    await none.reload();
    const gone = await get(none, `/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31`, { 'convx-data-version': w1 });
    expect(gone.status).toBe(412);
    expect(gone.body.requestedVersion).toBe(w1);
    // a version never held is refused the same way
    expect((await get(none, ITEMS, { 'convx-data-version': 'never-served' })).body.type).toBe('urn:convx:problem:data-version-changed');
  });

  it('--version-grace takes whole seconds', async () => {
    for (const value of ['soon', '-1', '1.5', '86401']) {
      const run = await cli(['serve', '--data', shopOf(1), '--port', '0', '--version-grace', value], { env: { CONVX_JWT_SECRET: SECRET } });
      expect(run.code, value).toBe(2);
      expect(run.stderr).toContain(`--version-grace: "${value}" is not a whole number of seconds from 0 to 86400`);
    }
  });

  it('is documented in /openapi.json: the request header, the response header and the 412', async () => {
    const server = await serve(shopOf(2));
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, { get: { parameters: { in: string; name: string }[]; responses: Record<string, { headers?: Record<string, unknown> }> } }>;
    };
    for (const path of ['/v1/conversions', '/v1/conversions/items', '/v1/deliveries/{smartflowId}/{deliveryId}/conversions']) {
      const operation = doc.paths[path]!.get;
      expect(operation.parameters.some((p) => p.in === 'header' && p.name === 'Convx-Data-Version'), path).toBe(true);
      expect(operation.responses['200']!.headers?.['Convx-Data-Version'], path).toBeDefined();
      expect(operation.responses['412']!.headers?.['Convx-Data-Version'], path).toBeDefined();
    }
  });
});

/**
 * A loopback proxy in front of a server that, after the first unpinned items page has been
 * answered and before that answer goes on to the client, runs `between` (change the files,
 * reload): a deterministic reload between the first page and the rest.
 */
async function reloadingProxy(target: RunningServer, between: () => Promise<void>): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  let fired = false;
  const seen: IncomingHttpHeaders[] = [];
  const proxy = createServer((req, res) => {
    seen.push(req.headers);
    void (async () => {
      const forwarded: Record<string, string> = {};
      for (const name of ['authorization', 'accept', 'convx-data-version', 'if-none-match']) {
        const value = req.headers[name];
        if (typeof value === 'string') forwarded[name] = value;
      }
      const upstream = await fetch(`${target.url}${req.url}`, { headers: forwarded });
      const body = Buffer.from(await upstream.arrayBuffer());
      if (!fired && req.url!.startsWith('/v1/conversions/items') && req.headers['convx-data-version'] === undefined) {
        fired = true;
        await between();
      }
      const headers: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) headers[name] = value;
      });
      res.writeHead(upstream.status, headers).end(body);
    })().catch((error: unknown) => res.writeHead(502).end(String(error)));
  });
  others.push(proxy);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, seen };
}

describe('convx items --all in API mode across a reload (SIGHUP) between pages', () => {
  // 2500 conversions: three pages of 1000.
  const N = 2500;
  const ALL = ['items', ...PERIOD, '--all', '-o', 'jsonl'];

  it('within the grace period, prints exactly the old data’s full answer: every page pinned to the first page’s version', async () => {
    const dir = shopOf(N);
    const expected = await cli([...ALL, '--data', dir]);
    expect(expected.code, expected.stderr).toBe(0);
    expect(expected.stdout.trimEnd().split('\n')).toHaveLength(N);
    const server = await serve(dir, 60);
    const v1 = server.holder.current.version;
    const proxy = await reloadingProxy(server, async () => {
      shift(dir, N);
      await server.reload();
    });
    const run = await api(proxy, ALL);
    expect(run.code, run.stderr).toBe(0);
    expect(server.holder.current.version).not.toBe(v1); // the reload did happen, between the pages
    expect(run.stdout).toBe(expected.stdout);
    const pinned = proxy.seen.filter((h) => h['convx-data-version'] !== undefined);
    expect(pinned).toHaveLength(2);
    expect(pinned.every((h) => h['convx-data-version'] === v1)).toBe(true);
  });

  it('with --version-grace 0, stops with exit 5 naming the change (from version A to B), having printed only rows of the old data', async () => {
    const dir = shopOf(N);
    const expected = await cli([...ALL, '--data', dir]);
    const server = await serve(dir, 0);
    const v1 = server.holder.current.version;
    const proxy = await reloadingProxy(server, async () => {
      shift(dir, N);
      await server.reload();
    });
    const run = await api(proxy, ALL);
    const v2 = server.holder.current.version;
    expect(v2).not.toBe(v1);
    expect(run.code).toBe(5);
    expect(run.stderr).toContain(`the data changed while paging (from version ${v1} to ${v2})`);
    expect(run.stderr).toMatch(/run the command again/);
    // what was printed is the old data's first page, nothing of the new data, nothing twice
    const printed = run.stdout.trimEnd().split('\n');
    expect(printed.length).toBe(1000);
    expect(expected.stdout.startsWith(run.stdout)).toBe(true);
    expect(new Set(printed.map((line) => JSON.parse(line).orderId)).size).toBe(printed.length);
  });

  it('a page of another version than the first (a server that ignores the pin) is exit 5 as well, a single page just prints what it gets, and a server without versions gets the count check', async () => {
    const record = (i: number) => ({
      contactId: 'c1', clientContactId: null, datetime: '2024-03-01T10:00:00.000Z', orderId: `o${i}`, firstName: null, surname: null,
      conversionsAmount: 1, conversionsCurrency: 'EUR', conversionsReferenceAmount: 1, referenceCurrency: 'EUR', country: null, isRefund: false,
      attribution: { touch: 'click', datetime: '2024-03-01T09:00:00.000Z', hoursToConversion: 1, model: 'last-click', windowDays: 30 },
      source: { type: 'campaign', id: 'k1', name: 'K', campaignId: 'k1', smartflowId: null, smartflowName: null, deliveryId: null, deliveryName: null, detailUrl: '/v1/campaigns/k1/conversions' },
      activityUrl: '/v1/campaigns/k1/recipients/c1/activity',
    });
    /** A server of 2500 records whose pages say `paging(start)`, recording the request headers. */
    const scripted = async (paging: (start: number) => { totalCount: number; dataVersion?: string }) => {
      const seen: IncomingHttpHeaders[] = [];
      const server = createServer((req, res) => {
        seen.push(req.headers);
        const url = new URL(req.url!, 'http://x');
        const start = Number(url.searchParams.get('offset'));
        const { totalCount, dataVersion } = paging(start);
        const count = Math.max(0, Math.min(Number(url.searchParams.get('limit')), totalCount - start));
        res.writeHead(200, { 'content-type': 'application/json' });
        const page = { start, count, totalCount, ...(dataVersion !== undefined ? { dataVersion } : {}) };
        res.end(JSON.stringify({ conversions: Array.from({ length: count }, (_, k) => record(start + k)), paging: page }));
      });
      others.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
    };
    const at = await scripted((start) => ({ totalCount: 2500, dataVersion: start === 0 ? 'version-a' : 'version-b' }));
    const seen = at.seen;
    const run = await api(at, ALL);
    expect(run.code).toBe(5);
    expect(run.stderr).toContain('the data changed while paging (from version version-a to version-b)');
    expect(seen.slice(1).every((h) => h['convx-data-version'] === 'version-a')).toBe(true);
    const page = await api(at, ['items', ...PERIOD, '--offset', '1000', '--limit', '2', '-o', 'json']);
    expect(page.code, page.stderr).toBe(0);
    expect(JSON.parse(page.stdout).paging).toEqual({ start: 1000, count: 2, totalCount: 2500, dataVersion: 'version-b' });
    // A server that names no version: nothing is pinned, and a changed count still stops the walk.
    const unversioned = await scripted((start) => ({ totalCount: start === 0 ? 2500 : 2400 }));
    const counted = await api(unversioned, ALL);
    expect(counted.code).toBe(5);
    expect(counted.stderr).toMatch(/the result changed while paging: at offset 1000/);
    expect(unversioned.seen.every((h) => h['convx-data-version'] === undefined)).toBe(true);
  });
});
