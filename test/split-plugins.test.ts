/**
 * One file per plugin (issue 21, item 2): `convx data import DIR --split-plugins --into OUT/`
 * writes OUT/<plugin>.duckdb, each answering as the directory does for that plugin; a plugin id
 * that cannot name a file is refused before anything is written; `convx serve --data OUT/` opens
 * a plugin's file on its first request, keeps at most --max-open-plugins open (the least recently
 * used that no request holds is closed) and, with --max-plugin-memory, the open files' DuckDB memory
 * within the budget, and a reload picks up new, changed and removed files.
 */
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { signDevelopmentToken } from '../src/server/auth.js';
import { Database } from '../src/local/db.js';
import { sql } from '../src/local/sql.js';
import { MIN_FILE_MEMORY_LIMIT, PluginFiles } from '../src/server/plugin-files.js';
import { ServedDataset, type ServeOptions } from '../src/server/plugins.js';
import { startPluginFiles, type RunningServer } from '../src/server/start.js';
import { cli, csv, dataset, reportQuery, serveInProcess, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'split-plugins-secret';
const PLUGINS = ['shop-1', 'shop-2', 'shop-3'];
const HALF = ['--from', '2024-01-01', '--to', '2024-06-30'];
const QUERY = 'dateFrom=2024-01-01&dateTo=2024-06-30';
const root = tempDir('convx-split-');

/** A generated dataset of `plugins` plugins (seed: other data under the same plugin ids). */
async function generate(name: string, plugins: number, seed: number): Promise<string> {
  const out = join(root, name);
  const run = await cli(['data', 'generate', '--out', out, '--orders', '400', '--touches', '3000', '--contacts', '120', '--plugins', String(plugins), '--seed', String(seed)]);
  expect(run.code, run.stderr).toBe(0);
  return out;
}

async function split(dir: string, into: string, ...extra: string[]) {
  return cli(['data', 'import', dir, '--split-plugins', '--into', into, ...extra]);
}

const noVersion = (text: string) => text.replace(/"dataVersion": ?"[\w-]+"/g, '"dataVersion":"<version>"');

/**
 * The commands that compare a plugin's file with other datasets (the directory, the whole import, the
 * file with and without --plugin, the server): each dataset opened by the first command that names
 * it with its flags and lent to the next (kept-backends.ts), so the directory is read once per plugin.
 */
const kept = keptBackends();

let gen: string;
let out: string;
let whole: string;

beforeAll(async () => {
  gen = await generate('gen', 3, 1);
  out = join(root, 'out');
  whole = join(root, 'whole.duckdb');
  const [splitRun, wholeRun] = await Promise.all([split(gen, out), cli(['data', 'import', gen, '--into', whole])]);
  expect(splitRun.code, splitRun.stderr).toBe(0);
  expect(wholeRun.code, wholeRun.stderr).toBe(0);
});

describe('data import --split-plugins', () => {
  it('writes one file per plugin and nothing else, and says so', async () => {
    expect(readdirSync(out).sort()).toEqual(PLUGINS.map((p) => `${p}.duckdb`));
  });

  it('each file prints what the directory and the whole import print with --plugin: report, items and an order', async () => {
    for (const plugin of PLUGINS) {
      const file = join(out, `${plugin}.duckdb`);
      const first = JSON.parse((await kept(['items', ...HALF, '--plugin', plugin, '-o', 'json', '--limit', '1', '--data', gen])).stdout);
      const orderId: string = first.conversions[0].orderId;
      for (const argv of [
        ['report', ...HALF],
        ['report', ...HALF, '--breakdown', '-o', 'csv'],
        ['items', ...HALF, '--all', '-o', 'jsonl'],
        ['items', ...HALF, '--limit', '20'],
        ['order', orderId],
      ]) {
        const fromDir = await kept([...argv, '--plugin', plugin, '--data', gen]);
        expect(fromDir.code, fromDir.stderr).toBe(0);
        expect(fromDir.stdout.length).toBeGreaterThan(50);
        const fromWhole = await kept([...argv, '--plugin', plugin, '--data', whole]);
        const fromFile = await kept([...argv, '--data', file]);
        const fromFileNamed = await kept([...argv, '--plugin', plugin, '--data', file]);
        for (const run of [fromWhole, fromFile, fromFileNamed]) {
          expect(run.code, run.stderr).toBe(0);
          expect(noVersion(run.stdout), argv.join(' ')).toBe(noVersion(fromDir.stdout));
        }
      }
      // The directory itself is no dataset: local mode names a file to pass instead.
      if (plugin === 'shop-1') {
        const dir = await cli(['report', ...HALF, '--data', out]);
        expect(dir.code).toBe(2);
        expect(dir.stderr).toContain(`pass one to --data, e.g. --data ${join(out, 'shop-1.duckdb')}`);
      }
      // The file holds this plugin only: another's id is not found in it.
      const other = await cli(['report', ...HALF, '--plugin', PLUGINS.find((p) => p !== plugin)!, '--data', file]);
      expect(other.code).toBe(2);
    }
  });

  it("refuses a dataset whose contacts have no plugin_id (each plugin's file would hold every contact), unless --shared-tables; --shared-tables alone is a usage error", async () => {
    const orders = csv(['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], [
      ['A', 'o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
      ['B', 'o2', 'c2', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
    ]);
    const touches = csv(['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [['A', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]);
    const dir = dataset({ 'orders.csv': orders, 'touches.csv': touches, 'contacts.csv': csv(['contact_id', 'email'], [['c1', 'a@x.dev'], ['c2', 'b@x.dev']]) });
    const into = join(root, 'shared-contacts');
    const refused = await split(dir, into);
    expect([refused.code, refused.stderr]).toEqual([
      2,
      `convx: error: the dataset at ${dir} holds 2 plugins, and its contacts has no plugin_id: each plugin's file would hold all of its rows\n  give each row its plugin in a plugin_id column, or pass --shared-tables where every plugin may read them\n`,
    ]);
    expect(existsSync(into)).toBe(false);
    const shared = await cli(['data', 'import', dir, '--split-plugins', '--into', into, '--shared-tables', '--quiet']);
    expect(shared.code, shared.stderr).toBe(0);
    expect(readdirSync(into).sort()).toEqual(['A.duckdb', 'B.duckdb']);
    const alone = await cli(['data', 'import', dir, '--into', join(root, 'one.duckdb'), '--shared-tables']);
    expect([alone.code, alone.stderr]).toEqual([2, 'convx: error: --shared-tables goes with --split-plugins: one file of every plugin shares every table anyway\n']);
  });

  it('refuses a plugin id that cannot name a file, naming it, before anything is written', async () => {
    for (const bad of ['../evil', '..', 'a b', 'x\\y']) {
      const dir = dataset({
        'orders.csv': csv(['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], [
          ['ok', 'o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
          [bad, 'o2', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
        ]),
        'touches.csv': csv(['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [['ok', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]),
      });
      const into = join(root, `refused-${readdirSync(root).length}`);
      const run = await split(dir, into);
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain(JSON.stringify(bad));
      expect(run.stderr).toMatch(/cannot name a file/);
      expect(existsSync(into)).toBe(false);
      // An existing directory stays as it was.
      mkdirSync(into);
      expect((await split(dir, into)).code).not.toBe(0);
      expect(readdirSync(into)).toEqual([]);
    }
  });

  it('refuses to replace files without --force and replaces them with it; --into a file is a usage error', async () => {
    const again = await split(gen, out);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/shop-1\.duckdb.*exist.*--force/);
    const file = join(root, 'a-file.duckdb');
    copyFileSync(whole, file);
    expect((await split(gen, file)).code).toBe(2);
    const named = await split(gen, join(root, 'new.duckdb'));
    expect(named.code).toBe(2);
    expect(named.stderr).toMatch(/names a directory/);
    expect(existsSync(join(root, 'new.duckdb'))).toBe(false);
    const nowhere = await split(gen, join(root, 'missing', 'plugins'));
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/the folder .*missing does not exist/);
    // (files a split import wrote, as beforeAll's into a new directory: a copy of them)
    const forced = join(root, 'forced');
    cpSync(out, forced, { recursive: true });
    const replaced = await split(gen, forced, '--force');
    expect(replaced.code).toBe(0);
    expect(replaced.stderr).not.toMatch(/also holds/);
    expect(readdirSync(forced).sort()).toEqual(PLUGINS.map((p) => `${p}.duckdb`));
    // A plugin's file this import did not write (its plugin gone from the dataset) stays, and is named: a server would answer for it.
    copyFileSync(join(forced, 'shop-1.duckdb'), join(forced, 'shop-9.duckdb'));
    const stale = await split(gen, forced, '--force');
    expect(stale.code).toBe(0);
    expect(stale.stderr).toMatch(/also holds shop-9\.duckdb, which this import did not write .*answers for it too; remove it if the plugin is gone/);
    // A plugin's file name taken by a directory: refused before anything is written, even with --force.
    const taken = join(root, 'taken');
    mkdirSync(join(taken, 'shop-2.duckdb'), { recursive: true });
    const refused = await split(gen, taken, '--force');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/shop-2\.duckdb: not a file/);
    expect(readdirSync(taken)).toEqual(['shop-2.duckdb']);
  });
});

describe('convx serve --data DIR of plugin files', () => {
  const servers: RunningServer<PluginFiles>[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  async function serve(dir: string, maxOpenPlugins: number, more: Partial<Parameters<typeof startPluginFiles>[0]> = {}): Promise<RunningServer<PluginFiles>> {
    const server = await startPluginFiles({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test', maxOpenPlugins, poolSize: 2, ...more });
    servers.push(server);
    return server;
  }

  async function get(server: { url: string }, plugin: string, path = `/v1/conversions/items?${QUERY}&limit=50`) {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, plugin, '1h')}` } });
    const text = await res.text();
    return { status: res.status, version: res.headers.get('convx-data-version'), text };
  }

  /** Local mode on a file: the -o json of the same items query (the data version included). */
  async function local(file: string): Promise<string> {
    const run = await cli(['items', ...HALF, '--limit', '50', '-o', 'json', '--data', file]);
    expect(run.code, run.stderr).toBe(0);
    return run.stdout;
  }

  it('opens a file on its plugin\'s first request and keeps at most --max-open-plugins open, closing the least recently used', async () => {
    const server = await serve(out, 2);
    const files = server.holder;
    expect(files.plugins).toEqual(PLUGINS);
    expect(files.stats).toEqual({ open: [], opened: 0, closed: 0 });
    const answers: Record<string, string> = {};
    // Requests that arrive together for a plugin not open yet wait for one opening.
    const together = await Promise.all([1, 2, 3, 4].map(() => get(server, 'shop-1')));
    expect(together.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(together.map((a) => a.text)).size).toBe(1);
    expect(files.stats).toEqual({ open: ['shop-1'], opened: 1, closed: 0 });
    for (const plugin of PLUGINS) {
      const answer = await get(server, plugin);
      expect(answer.status, answer.text).toBe(200);
      answers[plugin] = answer.text;
    }
    expect(files.stats).toEqual({ open: ['shop-2', 'shop-3'], opened: 3, closed: 1 });
    // shop-1 again: opened afresh, shop-2 (the least recently used) closed; the same answer.
    expect((await get(server, 'shop-1')).text).toBe(answers['shop-1']);
    expect(files.stats).toEqual({ open: ['shop-3', 'shop-1'], opened: 4, closed: 2 });
    // A file a request holds is not closed: shop-3 held, shop-2 opened, so shop-1 goes.
    const held = await files.hold('shop-3');
    await files.hold('shop-1').then((h) => h!.release());
    expect((await get(server, 'shop-2')).text).toBe(answers['shop-2']);
    expect(files.stats.open).toEqual(['shop-3', 'shop-2']);
    held!.release();
    // Each plugin's answers are its own: another's token never reaches its file.
    expect(new Set(Object.values(answers)).size).toBe(3);
    const unknown = await get(server, 'shop-9');
    expect(unknown.status).toBe(403);
    expect(unknown.text).toContain('urn:convx:problem:unknown-plugin');
  });

  it('keeps the open files\' DuckDB memory within --max-plugin-memory, closing the least recently used, each file\'s memory_limit the budget', async () => {
    // Each file's memory as served, measured with a budget that closes nothing.
    const loose = await serve(out, 16, { maxPluginMemory: 2 ** 30 });
    const answers: Record<string, string> = {};
    for (const plugin of PLUGINS) {
      answers[plugin] = (await get(loose, plugin)).text;
      await loose.holder.memorySettled();
    }
    const used = loose.holder.memory;
    expect([...used.keys()]).toEqual(PLUGINS);
    expect(loose.holder.stats).toEqual({ open: PLUGINS, opened: 3, closed: 0 });
    const sizes = [...used.values()];
    expect(Math.min(...sizes)).toBeGreaterThan(0);
    // A budget the three files pass and two keep to: the third file's opening closes the least recently used.
    const budget = sizes.reduce((a, b) => a + b, 0) - Math.floor(Math.min(...sizes) / 2);
    const lines: Record<string, unknown>[] = [];
    const tight = await serve(out, 16, { maxPluginMemory: budget, log: (line) => lines.push(line) });
    for (const plugin of PLUGINS) {
      expect((await get(tight, plugin)).text).toBe(answers[plugin]);
      await tight.holder.memorySettled();
    }
    expect(tight.holder.stats).toEqual({ open: ['shop-2', 'shop-3'], opened: 3, closed: 1 });
    expect([...tight.holder.memory.values()].reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
    expect(lines.filter((l) => l.msg === 'closed a plugin file (memory)').map((l) => [l.plugin, l.maxPluginMemory])).toEqual([['shop-1', budget]]);
    // shop-1 again: opened afresh, the same answer; shop-2 (now the least recently used) closed.
    expect((await get(tight, 'shop-1')).text).toBe(answers['shop-1']);
    await tight.holder.memorySettled();
    expect(tight.holder.stats.open).toEqual(['shop-3', 'shop-1']);
    // Each file's DuckDB gets the budget as its memory_limit, at least the room a query needs.
    const limits: (number | undefined)[] = [];
    const load = (file: string, options: ServeOptions) => (limits.push(options.memoryLimitBytes), ServedDataset.load(file, options));
    for (const maxMemoryBytes of [2 ** 30, budget, undefined]) {
      const files = new PluginFiles(out, { poolSize: 2, load, ...(maxMemoryBytes !== undefined ? { maxMemoryBytes } : {}) });
      try {
        (await files.hold('shop-1'))!.release();
      } finally {
        await files.close();
      }
    }
    expect(limits).toEqual([2 ** 30, MIN_FILE_MEMORY_LIMIT, undefined]);
    const db = await Database.open(':memory:', { memoryLimitBytes: MIN_FILE_MEMORY_LIMIT });
    try {
      expect(await db.one(sql`SELECT current_setting('memory_limit') AS m`)).toEqual({ m: '64.0 MiB' });
    } finally {
      db.close();
    }
  });

  it('a reload serves a new file, a changed file\'s new data with a new version, and forgets a removed one', async () => {
    // gen split as beforeAll split it into out: a copy of out
    const dir = join(root, 'reloaded');
    cpSync(out, dir, { recursive: true });
    const next = join(root, 'next');
    expect((await split(await generate('gen4', 4, 7), next)).code).toBe(0);
    const server = await serve(dir, 2);
    const before = await get(server, 'shop-1');
    expect(before.status).toBe(200);
    // A request in flight across the reload finishes on the data it began with.
    const inFlight = (await server.holder.hold('shop-1'))!;
    const oldTotal = async () => {
      const backend = await inFlight.dataset.backend('shop-1');
      try {
        return JSON.stringify(await backend.report(reportQuery('2024-01-01', '2024-06-30')));
      } finally {
        await backend.close();
      }
    };
    const beforeReload = await oldTotal();
    expect((await get(server, 'shop-4')).status).toBe(403);
    // Written beside, renamed over (as data import does); shop-4 added, shop-3 removed.
    copyFileSync(join(next, 'shop-1.duckdb'), join(dir, 'shop-1.duckdb.new'));
    renameSync(join(dir, 'shop-1.duckdb.new'), join(dir, 'shop-1.duckdb'));
    copyFileSync(join(next, 'shop-4.duckdb'), join(dir, 'shop-4.duckdb'));
    rmSync(join(dir, 'shop-3.duckdb'));
    await server.reload();
    expect(server.holder.plugins).toEqual(['shop-1', 'shop-2', 'shop-4']);
    expect(await oldTotal()).toBe(beforeReload);
    inFlight.release();
    const after = await get(server, 'shop-1');
    expect(after.status).toBe(200);
    expect(after.version).not.toBe(before.version);
    expect(after.text).not.toBe(before.text);
    expect(JSON.parse(after.text)).toEqual(JSON.parse(await local(join(dir, 'shop-1.duckdb'))));
    const added = await get(server, 'shop-4');
    expect(added.status, added.text).toBe(200);
    expect(JSON.parse(added.text)).toEqual(JSON.parse(await local(join(dir, 'shop-4.duckdb'))));
    expect((await get(server, 'shop-3')).status).toBe(403);
    // The version a reload replaced still answers a request pinned to it (the grace period).
    const pinned = await fetch(`${server.url}/v1/conversions/items?${QUERY}&limit=50`, {
      headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-1', '1h')}`, 'convx-data-version': before.version! },
    });
    expect(pinned.status).toBe(200);
    expect(await pinned.text()).toBe(before.text);
  });

  it('a file moved away before a reload is a plugin without data (403), as after the reload, not a failure (500)', async () => {
    const dir = join(root, 'moved');
    cpSync(out, dir, { recursive: true });
    const server = await serve(dir, 2);
    renameSync(join(dir, 'shop-3.duckdb'), join(root, 'shop-3-moved.duckdb'));
    const gone = await get(server, 'shop-3');
    expect(gone.status, gone.text).toBe(403);
    expect(JSON.parse(gone.text).type).toBe('urn:convx:problem:unknown-plugin');
    expect((await get(server, 'shop-1')).status).toBe(200);
  });

  it('a file named after another plugin than it holds, or cut short, is never served: a 503 plugin-unavailable, its reason in the log alone, no stack', async () => {
    const dir = join(root, 'renamed');
    mkdirSync(dir);
    copyFileSync(join(out, 'shop-1.duckdb'), join(dir, 'shop-2.duckdb'));
    const whole = readFileSync(join(out, 'shop-3.duckdb'));
    writeFileSync(join(dir, 'shop-3.duckdb'), whole.subarray(0, whole.length >> 2));
    const logs: Record<string, unknown>[] = [];
    const server = await serve(dir, 2, { log: (entry) => logs.push(entry) });
    for (const [plugin, reason] of [['shop-2', /holds plugin shop-1, not shop-2/], ['shop-3', /IO Error/]] as const) {
      const res = await fetch(`${server.url}/v1/conversions?${QUERY}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, plugin, '1h')}` } });
      const body = (await res.json()) as { type: string; detail: string };
      expect(res.status, plugin).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(body.type).toBe('urn:convx:problem:plugin-unavailable');
      expect(body.detail).toBe(`the data of plugin ${plugin} cannot be opened on this server now; its operator has the reason in the server's log`);
      expect(JSON.stringify(body)).not.toContain('shop-1.duckdb');
      expect(logs.find((l) => l.msg === 'cannot open a plugin file' && l.plugin === plugin)?.error).toMatch(reason);
    }
    expect(logs.filter((l) => l.msg === 'unexpected error' || 'stack' in l)).toEqual([]);
    expect(server.holder.stats.open).toEqual([]);
    // API mode says so at once, without asking three more times (the server's file stays as it is until its operator replaces it)
    const api = await cli(['report', ...HALF, '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: await signDevelopmentToken(SECRET, 'shop-3', '1h') } });
    expect(api.code).toBe(5);
    expect(api.stderr).toContain("convx: error: the API cannot open its data for the token's plugin (HTTP 503 from ");
    expect(api.stderr).toContain("so convx did not retry");
    expect(api.slept).toBeUndefined();
  });

  it('logs each .duckdb file of the directory it does not serve, with why, at the start and at each reload', async () => {
    const dir = join(root, 'skipped');
    cpSync(out, dir, { recursive: true });
    writeFileSync(join(dir, 'notes.duckdb'), 'not a database\n');
    writeFileSync(join(dir, 'a b.duckdb'), 'not a database either\n');
    const logs: Record<string, unknown>[] = [];
    const server = await serve(dir, 2, { log: (entry) => logs.push(entry) });
    const skipped = () => logs.filter((l) => l.msg === 'skipped a file of the plugin directory').map((l) => l.reason);
    const expected = ['a b.duckdb is not a plugin id convx writes a file for', 'notes.duckdb is not a DuckDB file (convx serve skips it)'];
    expect(skipped()).toEqual(expected);
    expect(server.holder.plugins).toEqual(['shop-1', 'shop-2', 'shop-3']);
    await server.holder.reload();
    expect(skipped()).toEqual([...expected, ...expected]);
  });

  it('refuses a directory whose .duckdb files it all skips, naming each with why, where it said there was nothing to serve', async () => {
    const dir = join(root, 'all-skipped');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.duckdb'), 'not a database\n');
    writeFileSync(join(dir, 'a b.duckdb'), 'not a database either\n');
    const run = await cli(['serve', '--data', dir, '--port', '0'], { env: { CONVX_JWT_SECRET: SECRET } });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `convx: error: the directory ${dir} holds no dataset table and no .duckdb file convx serves:\n` +
        '  a b.duckdb is not a plugin id convx writes a file for\n  notes.duckdb is not a DuckDB file (convx serve skips it)\n' +
        `  (convx data import DATASET --split-plugins --into ${dir} writes one file per plugin)\n`,
    );
    // beside a dataset's tables, .duckdb files are not a plugin directory's: the dataset is served
    cpSync(gen, dir, { recursive: true });
    const served = await serveInProcess(['--data', dir, '--port', '0', '--pool-size', '1'], { CONVX_JWT_SECRET: SECRET });
    try {
      const res = await fetch(`${served.url}/v1/conversions?${QUERY}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-1', '1h')}` } });
      expect(res.status).toBe(200);
    } finally {
      await served.stop();
    }
  });

  it('refuses a --max-plugin-memory that is not a size, before anything loads', async () => {
    for (const bad of ['12q', '0', '512k', '-1g', '1.5g']) {
      const run = await cli(['serve', '--data', out, '--port', '0', '--max-plugin-memory', bad], { env: { CONVX_JWT_SECRET: SECRET } });
      expect(run.code, bad).toBe(2);
      expect(run.stderr).toContain(`--max-plugin-memory: "${bad}" is not a size from 1m to 1048576g such as 512m or 4g (bytes, KiB, MiB, GiB)`);
    }
  });

  it('bounds a directory only: --max-open-plugins or --max-plugin-memory with a dataset is a usage error, before anything loads', async () => {
    for (const flags of [['--max-open-plugins', '2'], ['--max-plugin-memory', '1g'], ['--max-open-plugins', '2', '--max-plugin-memory', '1g']]) {
      const run = await cli(['serve', '--data', gen, '--port', '0', ...flags], { env: { CONVX_JWT_SECRET: SECRET } });
      expect(run.code, flags.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/bounds? a directory of plugin files, and .* is a dataset\nhint: a directory of plugin files is written by: convx data import DIR --split-plugins/);
      expect(run.stderr).not.toMatch(/listening/);
    }
  });

  it("answers a current If-None-Match with a 304 without opening the plugin's file; a changed file's tag is another", async () => {
    const dir = join(root, 'conditional');
    cpSync(out, dir, { recursive: true });
    const server = await serve(dir, 2);
    const first = await fetch(`${server.url}/v1/conversions?${QUERY}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-2', '1h')}` } });
    const tag = first.headers.get('etag')!;
    expect(first.status).toBe(200);
    await first.text();
    // close shop-2's file: open two others (at most 2 open)
    for (const plugin of ['shop-1', 'shop-3']) expect((await get(server, plugin)).status).toBe(200);
    expect(server.holder.stats.open).not.toContain('shop-2');
    const opened = server.holder.stats.opened;
    const again = await fetch(`${server.url}/v1/conversions?${QUERY}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-2', '1h')}`, 'if-none-match': tag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(tag);
    expect(again.headers.get('convx-data-version')).toBe(first.headers.get('convx-data-version'));
    expect(server.holder.stats.opened).toBe(opened);
    expect(server.holder.stats.open).not.toContain('shop-2');
    // the file changed on disk (no reload): the tag of the version it has now is another, so a 200 from the new file
    const file = join(dir, 'shop-2.duckdb');
    utimesSync(file, new Date(), new Date(Date.now() + 60_000));
    const changed = await fetch(`${server.url}/v1/conversions?${QUERY}`, { headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-2', '1h')}`, 'if-none-match': tag } });
    expect(changed.status).toBe(200);
    await changed.text();
    expect(changed.headers.get('etag')).not.toBe(tag);
    // closed again, a request pinned to the version it answered with is answered (not a 412 naming that same version)
    for (const plugin of ['shop-1', 'shop-3']) expect((await get(server, plugin)).status).toBe(200);
    expect(server.holder.stats.open).not.toContain('shop-2');
    const pinned = await fetch(`${server.url}/v1/conversions?${QUERY}`, {
      headers: { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop-2', '1h')}`, 'convx-data-version': changed.headers.get('convx-data-version')! },
    });
    expect(pinned.status, await pinned.text()).toBe(200);
  });

  it('convx serve reads one dataset\'s order indexes right after its load; a directory\'s plugin files, only on a look-up', async () => {
    const eager = vi.spyOn(ServedDataset.prototype, 'indexAllOrders');
    try {
      const directory = await serveInProcess(['--data', out, '--port', '0', '--pool-size', '2'], { CONVX_JWT_SECRET: SECRET });
      const token = await signDevelopmentToken(SECRET, 'shop-1', '1h');
      expect((await fetch(`${directory.url}/v1/conversions?dateFrom=2024-01-01&dateTo=2024-01-31`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect(await directory.stop()).toBe(0);
      expect(eager).not.toHaveBeenCalled();
      const one = await serveInProcess(['--data', join(out, 'shop-1.duckdb'), '--port', '0', '--pool-size', '2'], { CONVX_JWT_SECRET: SECRET });
      expect(await one.stop()).toBe(0);
      expect(eager).toHaveBeenCalledTimes(1);
    } finally {
      eager.mockRestore();
    }
  });

  it('API mode through convx serve --max-open-plugins prints what local mode prints from the plugin\'s file', async () => {
    const server = await serveInProcess(['--data', out, '--port', '0', '--max-open-plugins', '2', '--max-plugin-memory', '1g', '--pool-size', '2'], { CONVX_JWT_SECRET: SECRET });
    try {
      for (const plugin of PLUGINS) {
        const env = { CONVX_TOKEN: await signDevelopmentToken(SECRET, plugin, '1h') };
        for (const argv of [['report', ...HALF], ['items', ...HALF, '--all', '-o', 'json'], ['report', ...HALF, '--breakdown', '-o', 'csv']]) {
          const fromFile = await kept([...argv, '--data', join(out, `${plugin}.duckdb`)]);
          const viaApi = await cli([...argv, '--api', `${server.url}/v1`], { env });
          expect(fromFile.code, fromFile.stderr).toBe(0);
          expect(viaApi.code, viaApi.stderr).toBe(0);
          expect(viaApi.stdout, `${plugin}: ${argv.join(' ')}`).toBe(fromFile.stdout);
        }
      }
      // Opened on the first request each, logged; SIGHUP lists the directory again.
      const log = server.log();
      expect(log).toMatch(/"msg":"listening","url":"[^"]+","pid":\d+,"plugins":\["shop-1","shop-2","shop-3"\],"poolSize":2,"maxOpenPlugins":2,"maxPluginMemory":1073741824,/);
      expect(log.match(/"msg":"opened a plugin file"/g)!.length).toBeGreaterThanOrEqual(3);
      expect(log).toMatch(/"msg":"closed a plugin file \(least recently used\)"/);
      server.signal('SIGHUP');
      await expect.poll(() => server.log()).toMatch(/"msg":"reloaded","ms":\d+,"generation":2,"plugins":\["shop-1","shop-2","shop-3"\]\}/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('a dataset without plugin_id is one file, default.duckdb, served to the plugin "default"', async () => {
    const dir = dataset({
      'orders.csv': csv(['order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], [['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12]]),
      'touches.csv': csv(['contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1']]),
    });
    const into = join(root, 'single');
    expect((await split(dir, into)).code).toBe(0);
    expect(readdirSync(into)).toEqual(['default.duckdb']);
    const server = await serve(into, 1);
    const answer = await get(server, 'default', `/v1/conversions?${QUERY}`);
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text).conversions).toHaveLength(1);
  });
});
