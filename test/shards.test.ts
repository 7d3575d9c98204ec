/**
 * Shards behind HAProxy (`convx data shards`), end to end on loopback: three plugins' files
 * (`data import --split-plugins`) spread over two `convx serve` shards (the built binary), and
 * Debian's HAProxy in front, configured by the files `data shards` writes. Each plugin's requests
 * reach its shard; API mode through the proxy prints what local mode prints; a forged claim reaches
 * a shard that refuses it; a SIGHUP of a shard under load loses nothing; a stopped shard's plugins
 * get HAProxy's problem+json 503 while the other plugins are answered.
 *
 * Without haproxy (/usr/sbin/haproxy or $HAPROXY) the file is skipped, except under CI, where it
 * fails: `.ci/run` installs Debian's haproxy when it is missing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readlinkSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDevelopmentToken } from '../src/server/auth.js';
import { planShards, shardMap } from '../src/server/shards.js';
import { cli, SAMPLES, tempDir } from './helpers.js';

const HAPROXY = process.env.HAPROXY ?? '/usr/sbin/haproxy';
const present = existsSync(HAPROXY);
const ci = Boolean(process.env.CI);
const SECRET = 'shards-test-secret-long-enough-0123';
const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PERIOD = ['--from', '2024-01-01', '--to', '2024-06-30'];
const QUERY = '/v1/conversions?dateFrom=2024-01-01&dateTo=2024-06-30&limit=1000';

if (!present && !ci) console.warn(`shards.test.ts: skipped, no HAProxy at ${HAPROXY} (apt-get install haproxy, or set HAPROXY)`);

/** A port free on loopback now (HAProxy's configuration names the shards' ports before they start). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A child process and what it wrote on stderr so far. */
interface Child {
  process: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

function start(command: string, args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return { process: child, stderr: () => stderr, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

async function until(done: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const began = Date.now();
  while (!(await done())) {
    if (Date.now() - began > ms) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

/** The plugins a shard's access log names, one per answered request. */
const pluginsServed = (shard: Child) =>
  shard
    .stderr()
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => (JSON.parse(line) as { plugin?: string }).plugin);

describe.runIf(present || ci)('shards behind HAProxy', () => {
  const root = tempDir('convx-shards-');
  const [data, plugins, deploy] = ['data', 'plugins', 'deploy'].map((name) => join(root, name)) as [string, string, string];
  let proxy = '';
  let shards: Child[] = [];
  let haproxy: Child | undefined;
  const token = (plugin: string) => signDevelopmentToken(SECRET, plugin, '1h');
  const get = async (plugin: string, path = QUERY) => fetch(`${proxy}${path}`, { headers: { authorization: `Bearer ${await token(plugin)}` } });

  beforeAll(async () => {
    if (!present) expect.fail(`no HAProxy at ${HAPROXY}: .ci/run installs Debian's haproxy when it is missing`);
    const generated = await cli(['data', 'generate', '--out', data, '--plugins', '3', '--orders', '900', '--touches', '6000', '--contacts', '200']);
    expect(generated.code, generated.stderr).toBe(0);
    const imported = await cli(['data', 'import', data, '--split-plugins', '--into', plugins]);
    expect(imported.code, imported.stderr).toBe(0);
    const [listen, one, two] = [await freePort(), await freePort(), await freePort()];
    const planned = await cli(['data', 'shards', plugins, '--servers', `127.0.0.1:${one},127.0.0.1:${two}`, '--listen', `127.0.0.1:${listen}`, '--out', deploy, '-o', 'json']);
    expect(planned.code, planned.stderr).toBe(0);
    shards = [one, two].map((port, i) =>
      start(process.execPath, [BIN, 'serve', '--data', join(deploy, `shard_${i + 1}`), '--port', String(port), '--rate-limit', '0'], { CONVX_JWT_SECRET: SECRET }),
    );
    for (const shard of shards) await until(() => /"msg":"listening"/.test(shard.stderr()) || shard.process.exitCode !== null, 'a shard to listen');
    for (const shard of shards) expect(shard.process.exitCode, shard.stderr()).toBeNull();
    haproxy = start(HAPROXY, ['-db', '-f', join(deploy, 'haproxy.cfg')]);
    proxy = `http://127.0.0.1:${listen}`;
    await until(async () => (await fetch(`${proxy}/healthz`).catch(() => undefined))?.status === 200, `HAProxy on ${proxy}`);
  }, 120_000);

  afterAll(async () => {
    haproxy?.process.kill('SIGTERM');
    for (const shard of shards) shard.process.kill('SIGTERM');
    await Promise.all([haproxy?.exited, ...shards.map((s) => s.exited)]);
  });

  it('plans by size: every plugin on one shard, its file linked in that shard\'s folder, the map naming it', () => {
    const map = readFileSync(join(deploy, 'shards.map'), 'utf8').trim().split('\n').map((line) => line.split(' '));
    expect(map.map(([plugin]) => plugin)).toEqual(['shop-1', 'shop-2', 'shop-3']);
    for (const [plugin, shard] of map) {
      expect(readdirSync(join(deploy, shard!))).toContain(`${plugin}.duckdb`);
      expect(readlinkSync(join(deploy, shard!, `${plugin}.duckdb`))).toBe(join(plugins, `${plugin}.duckdb`));
    }
    // Two shards, three plugins: one shard holds two.
    expect(new Set(map.map(([, shard]) => shard))).toEqual(new Set(['shard_1', 'shard_2']));
  });

  it("routes each plugin's requests to its shard, and API mode through HAProxy prints what local mode prints", async () => {
    const map = new Map(readFileSync(join(deploy, 'shards.map'), 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]));
    for (const plugin of ['shop-1', 'shop-2', 'shop-3']) {
      const shard = shards[Number(map.get(plugin)!.slice('shard_'.length)) - 1]!;
      const other = shards.find((s) => s !== shard)!;
      const [before, beforeOther] = [pluginsServed(shard).length, pluginsServed(other).length];
      const env = { CONVX_TOKEN: await token(plugin) };
      const [api, local] = await Promise.all([
        cli(['report', '--api', `${proxy}/v1`, ...PERIOD, '-o', 'json', '--limit', '1000'], { env }),
        cli(['report', '--data', join(plugins, `${plugin}.duckdb`), ...PERIOD, '-o', 'json', '--limit', '1000']),
      ]);
      expect(api.code, api.stderr).toBe(0);
      expect(api.stdout).toBe(local.stdout);
      expect(JSON.parse(api.stdout).conversions.length).toBeGreaterThan(3);
      // The shard of the plugin answered it (its access log line comes through a pipe, a moment later);
      // the other shard saw nothing of it.
      await until(() => pluginsServed(shard).slice(before).includes(plugin), `${plugin} in its shard's log`, 5000);
      expect(pluginsServed(other).slice(beforeOther)).not.toContain(plugin);
    }
  });

  it('a claim forged for a plugin reaches its shard, which refuses the token', async () => {
    const shard = shards[Number(readFileSync(join(deploy, 'shards.map'), 'utf8').match(/^shop-2 shard_(\d)$/m)![1]) - 1]!;
    const before = shard.stderr().length;
    const forged = await signDevelopmentToken('another-secret-long-enough-0123456', 'shop-2', '1h');
    const res = await fetch(`${proxy}${QUERY}`, { headers: { authorization: `Bearer ${forged}` } });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ type: 'urn:convx:problem:invalid-token', detail: 'the token signature does not verify' });
    await until(() => /"status":403/.test(shard.stderr().slice(before)), 'the refusal in the log of shop-2\'s shard', 5000);
  });

  it('loses nothing while a shard reloads (SIGHUP) under load', async () => {
    const shard = shards[0]!;
    const reloads = () => (shard.stderr().match(/"msg":"reloaded"/g) ?? []).length;
    const plugin = readFileSync(join(deploy, 'shards.map'), 'utf8').split('\n').find((line) => line.endsWith(' shard_1'))!.split(' ')[0]!;
    let answered = 0;
    const statuses: number[] = [];
    let reloaded = false;
    const worker = async () => {
      // Until the reload is done and 20 more answers came after it.
      let after = Infinity;
      while (!reloaded || answered < after) {
        const res = await get(plugin, `/v1/conversions?dateFrom=2024-0${1 + (answered % 6)}-01&dateTo=2024-06-30`);
        statuses.push(res.status);
        await res.arrayBuffer();
        answered++;
        if (reloaded && after === Infinity) after = answered + 20;
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, worker));
    await until(() => answered >= 16, 'the load to start');
    const before = reloads();
    shard.process.kill('SIGHUP');
    await until(() => reloads() > before, 'the reload');
    reloaded = true;
    await load;
    expect(statuses.length).toBeGreaterThan(40);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it("answers a stopped shard's plugins with a problem+json 503, and keeps answering the other plugins", async () => {
    const map = readFileSync(join(deploy, 'shards.map'), 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]);
    const down = map.filter(([, shard]) => shard === 'shard_2').map(([plugin]) => plugin);
    const up = map.filter(([, shard]) => shard === 'shard_1').map(([plugin]) => plugin);
    shards[1]!.process.kill('SIGTERM');
    expect(await shards[1]!.exited).toBe(0);
    // Twice: the first request finds the connection refused and marks the shard down (after one retry); the second is answered alike.
    for (const plugin of [...down, ...down]) {
      const res = await get(plugin);
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toMatchObject({ type: 'urn:convx:problem:shard-unavailable', status: 503 });
    }
    // Marked down by the refused connection itself (HAProxy's "Health analyze"), not only two health checks later.
    await until(() => /shard_2 is DOWN/.test(haproxy!.stderr()), 'shard_2 marked down');
    expect(haproxy!.stderr()).toMatch(/shard_2 is DOWN, reason: Health analyze/);
    for (const plugin of up) expect((await get(plugin)).status).toBe(200);
    // API mode says so as it says any problem, with the exit code of an unavailable service.
    const api = await cli(['report', '--api', `${proxy}/v1`, ...PERIOD], { env: { CONVX_TOKEN: await token(down[0]!) } });
    expect(api.code).not.toBe(0);
    expect(api.stderr).toMatch(/503|not answering/);
  });
});

describe('convx data shards plans without HAProxy', () => {
  it('puts the largest plugin first on the lightest shard, the same way every time', () => {
    const files = [['a', 1], ['b', 8], ['c', 10], ['d', 9]].map(([plugin, bytes]) => ({ plugin: plugin as string, file: `/p/${plugin}.duckdb`, bytes: bytes as number }));
    const plan = planShards(files, ['h:1', 'h:2']);
    expect(plan.map((s) => [s.name, s.server, s.plugins.map((p) => p.plugin), s.bytes])).toEqual([
      ['shard_1', 'h:1', ['a', 'c'], 11],
      ['shard_2', 'h:2', ['b', 'd'], 17],
    ]);
    expect(planShards([...files].reverse(), ['h:1', 'h:2'])).toEqual(plan);
    expect(shardMap(plan)).toBe('a shard_1\nb shard_2\nc shard_1\nd shard_2\n');
    // More shards than plugins: the rest hold none, and the map still routes a claim-less request to shard_1.
    expect(planShards(files.slice(0, 1), ['h:1', 'h:2']).map((s) => s.plugins.length)).toEqual([1, 0]);
  });

  it('refuses what it cannot plan, and writes nothing', async () => {
    const root = tempDir('convx-shards-plan-');
    const dir = join(root, 'plugins');
    mkdirSync(dir);
    // a DuckDB file's head (what serve and shards look for), as an empty database file begins
    const duckdb = Buffer.concat([Buffer.alloc(8), Buffer.from('DUCK'), Buffer.alloc(4)]);
    writeFileSync(join(dir, 'shop.duckdb'), duckdb);
    const run = (...args: string[]) => cli(['data', 'shards', dir, '--out', join(root, 'deploy'), ...args]);
    expect((await run()).stderr).toMatch(/--shards <n> is required/);
    expect((await run('--shards', '0')).stderr).toMatch(/--shards: "0" must be a whole number from 1 to 256/);
    expect((await run('--shards', '3', '--servers', 'a:1,b:2')).stderr).toMatch(/--shards 3 but --servers names 2 servers/);
    expect((await run('--servers', 'a:1,http://b')).stderr).toMatch(/--servers: "http:\/\/b" is not host:port/);
    // a port HAProxy refuses, two shards at one address, a --listen out of range (found by a tester)
    expect((await run('--servers', '127.0.0.1:99999')).stderr).toMatch(/--servers: "127\.0\.0\.1:99999" is not host:port \(a port from 1 to 65535\)/);
    expect((await run('--servers', '127.0.0.1:0')).stderr).toMatch(/--servers: "127\.0\.0\.1:0" is not host:port/);
    expect((await run('--servers', '127.0.0.1:8081,127.0.0.1:8081')).stderr).toMatch(/--servers names 127\.0\.0\.1:8081 twice: each shard is a convx serve of its own/);
    // one address under two spellings: localhost is 127.0.0.1 where HAProxy resolves it, a host in any case
    expect((await run('--servers', 'localhost:9001,127.0.0.1:9001')).stderr).toMatch(/--servers names one address twice, localhost:9001 and 127\.0\.0\.1:9001: each shard/);
    expect((await run('--servers', 'Shard-A:9001,shard-a:9001')).stderr).toMatch(/--servers names one address twice, Shard-A:9001 and shard-a:9001/);
    expect((await run('--shards', '1', '--listen', '127.0.0.1:70000')).stderr).toMatch(/--listen: "127\.0\.0\.1:70000" is not host:port/);
    expect((await cli(['data', 'shards', join(root, 'none'), '--shards', '1', '--out', join(root, 'deploy')])).code).toBe(2);
    // a dataset's folder is what --split-plugins reads: the hint writes its files elsewhere (found by a tester), an empty folder's names it
    const aside = tempDir('convx-shards-folders-');
    const shop = join(aside, 'shop');
    cpSync(SAMPLES, shop, { recursive: true });
    const folder = await cli(['data', 'shards', shop, '--shards', '1', '--out', join(root, 'deploy')]);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain(`convx: error: ${shop} is a dataset's folder, not its plugins' files: write one file per plugin with convx data import ${shop} --split-plugins --into ${shop}-plugins/, then plan from that: convx data shards ${shop}-plugins/`);
    mkdirSync(join(aside, 'empty'));
    const empty = await cli(['data', 'shards', join(aside, 'empty'), '--shards', '1', '--out', join(root, 'deploy')]);
    expect(empty.stderr).toContain(`${join(aside, 'empty')} holds no .duckdb file: write one per plugin with convx data import DATASET --split-plugins --into ${join(aside, 'empty')}`);
    writeFileSync(join(dir, '..hidden.duckdb'), duckdb);
    const unsafe = await run('--shards', '1');
    expect(unsafe.code).toBe(2);
    expect(unsafe.stderr).toMatch(/"\.\.hidden" is not a plugin id/);
    rmSync(join(dir, '..hidden.duckdb'));
    // a file serve would skip is refused rather than routed to a shard that does not serve it
    writeFileSync(join(dir, 'other.duckdb'), 'x');
    const notDuckDb = await run('--shards', '1');
    expect(notDuckDb.code).toBe(2);
    expect(notDuckDb.stderr).toMatch(/other\.duckdb: "other" is not a DuckDB file \(convx serve skips it\)/);
    expect(existsSync(join(root, 'deploy'))).toBe(false);
    rmSync(join(dir, 'other.duckdb'));
    const written = await run('--shards', '1');
    expect(written.code).toBe(0);
    // a shard verifies every token: the line says with what (a shard without a key does not start)
    expect(written.stderr).toMatch(/start each shard \(--no-health-log: HAProxy checks \/healthz every second\), each with the tokens' key \(CONVX_JWT_SECRET, --jwt-public-key or --jwks: a shard verifies every token\):\n  convx serve --data \S+shard_1 --port 8081 --no-health-log\nthen HAProxy:\n  haproxy -f \S+haproxy\.cfg\n$/);
    // shards on other machines: the command to start each listens where HAProxy reaches it (found by a tester), one line per shard
    const remote = await run('--servers', '10.0.0.11:8080', '--force');
    expect(remote.stderr).toMatch(/:\n  convx serve --data \S+shard_1 --host 10\.0\.0\.11 --port 8080 --no-health-log\nthen HAProxy:/);
    const six = await run('--servers', '[::1]:8080', '--force');
    expect(six.stderr).toMatch(/convx serve --data \S+shard_1 --host ::1 --port 8080 --no-health-log\n/);
    const again = await run('--shards', '1');
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists: pass --force to replace it/);
    // More shards than plugins: written, with a warning that the empty shard's folder is one convx serve refuses.
    const tooMany = await run('--shards', '2', '--force');
    expect(tooMany.code).toBe(0);
    expect(tooMany.stderr).toMatch(/warning: 2 shards for 1 plugin file: shard_2 holds none, and convx serve refuses an empty folder \(plan at most 1 shard,/);
    // and no command to start it (found by a reviewer)
    expect(tooMany.stderr).toMatch(/shard_1 --port 8081 --no-health-log\nthen HAProxy:/);
    // A path haproxy.cfg would break on (a space ends its word) is refused before anything is written.
    const spaced = await cli(['data', 'shards', dir, '--shards', '1', '--out', join(root, 'my deploy')]);
    expect(spaced.code).toBe(2);
    expect(spaced.stderr).toMatch(/--out: ".*my deploy" holds " ", which haproxy.cfg cannot name/);
    writeFileSync(join(dir, 'shop-2.duckdb'), duckdb);
    // one line per shard, each on its own address (found by a tester: the first shard's alone was printed)
    const two = await run('--servers', '10.0.0.11:8080,10.0.0.12:9090', '--force');
    expect(two.stderr).toMatch(/:\n  convx serve --data \S+shard_1 --host 10\.0\.0\.11 --port 8080 --no-health-log\n  convx serve --data \S+shard_2 --host 10\.0\.0\.12 --port 9090 --no-health-log\nthen HAProxy:/);
    expect((await run('--shards', '2', '--force')).code).toBe(0);
    expect(readdirSync(join(root, 'deploy')).sort()).toEqual(['503.http', 'haproxy.cfg', 'shard_1', 'shard_2', 'shards.map']);
    expect(readdirSync(root).sort()).toEqual(['deploy', 'plugins']); // no staging left behind
  });
});
