/**
 * Issue 12: the cross-file wiring of the six parts. --wide and the terminal width reach the
 * table writer (the "columns left out" note on stderr); the global flags of contact, config and
 * completion; "not found" is exit 3; counts agree with their nouns; a missing --data is
 * "not found: PATH"; drill suggests `convx drill …`; API mode's --all progress waits its second
 * like every other progress line; the order search of an API without the look-up uses the clock
 * and says how far it has got.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Backend } from '../src/backend.js';
import { COMMANDS } from '../src/commands/index.js';
import { withBackend } from '../src/commands/shared.js';
import type { Context } from '../src/context.js';
import { ExitCode, NotFoundError } from '../src/errors.js';
import { cli, SAMPLES, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');

const PERIOD = ['--from', '2024-01-01', '--to', '2024-04-30'];
const strip = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

const tableLines = (stdout: string) => strip(stdout).split('\n').filter((l) => /^[┌│├└]/.test(l));

/**
 * samples/shop opened once and lent to the commands of the tests on what they print (kept-backends.ts);
 * those on a missing --data, data generate and serve open as convx does.
 */
const kept = keptBackends();

describe('--wide and the terminal width', () => {
  it('a table fits the terminal; the note on left-out columns goes to stderr, not stdout', async () => {
    const narrow = await kept.terminal(['report', '--data', SAMPLES, ...PERIOD], 80);
    expect(narrow.code, narrow.stderr).toBe(0);
    for (const line of tableLines(narrow.stdout)) expect(line.length).toBeLessThanOrEqual(80);
    expect(narrow.stdout).not.toMatch(/left out/);
    expect(narrow.stderr).toMatch(/^\d+ columns? left out to fit the terminal \(.*\); --wide shows every column$/m);
    // --quiet silences it, like any note for a person
    expect((await kept.terminal(['report', '--data', SAMPLES, ...PERIOD, '--quiet'], 80)).stderr).toBe('');
  });

  it('--wide shows every column at full width, for report, items and drill', async () => {
    for (const argv of [
      ['report', '--data', SAMPLES, ...PERIOD],
      ['items', '--data', SAMPLES, ...PERIOD, '--limit', '5'],
      ['drill', 'k-1', '--data', SAMPLES, ...PERIOD, '--limit', '5'],
    ]) {
      const fitted = await kept.terminal(argv, 60);
      const wide = await kept.terminal([...argv, '--wide'], 60);
      expect(wide.code, wide.stderr).toBe(0);
      expect(Math.max(...tableLines(fitted.stdout).map((l) => l.length))).toBeLessThanOrEqual(60);
      expect(Math.max(...tableLines(wide.stdout).map((l) => l.length))).toBeGreaterThan(60);
      expect(wide.stderr).not.toMatch(/left out/);
    }
  });

  it('falls back to $COLUMNS when the terminal reports 0 columns', async () => {
    const zero = await kept.terminal(['report', '--data', SAMPLES, ...PERIOD], 0, { COLUMNS: '70' });
    for (const line of tableLines(zero.stdout)) expect(line.length).toBeLessThanOrEqual(70);
    expect(zero.stderr).toMatch(/left out to fit the terminal/);
  });

  it('is a global flag that report, items, order, drill and contact honour, and other commands refuse', async () => {
    for (const command of ['report', 'items', 'order', 'drill', 'contact']) {
      const help = await cli([...command.split(' '), '--help']);
      expect(help.stdout.split('Global Options:')[1], command).toMatch(/--wide +table: every column at full width/);
    }
    const serve = await cli(['serve', '--data', SAMPLES, '--wide']);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toMatch(/^convx: error: --wide does not apply to convx serve\n/);
    expect((await kept(['order', 'o-2', '--data', SAMPLES, '--wide', '-o', 'json'])).code).toBe(0);
  });
});

describe('the global flags of contact, config and completion', () => {
  const globalsOf = async (argv: string[]) => (await cli([...argv, '--help'])).stdout.split('Global Options:')[1] ?? '';

  it('contact takes what order takes', async () => {
    const help = await globalsOf(['contact']);
    for (const flag of ['--data', '--api', '--token-file', '--profile', '--plugin', '--fields', '--wide', '--quiet']) expect(help).toContain(flag);
    expect(help).not.toContain('--delivery-api');
    const run = await cli(['contact', 'c-11', '--data', SAMPLES, '--delivery-api', 'http://127.0.0.1:1/v4']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^convx: error: --delivery-api does not apply to convx contact\n/);
  });

  it('config list and profiles take --profile and -o table, json or jsonl; get, set and unset take --profile', async () => {
    const list = await globalsOf(['config', 'list']);
    expect(list).toMatch(/--profile/);
    expect(list).toMatch(/-o, --format <format> +output format: table, json, jsonl/);
    expect(list).not.toMatch(/--data|--api|--fields|--wide/);
    expect(await globalsOf(['config', 'get'])).not.toMatch(/--format|--data/);
    const csv = await cli(['config', 'list', '-o', 'csv']);
    expect(csv.code).toBe(2);
    expect(csv.stderr).toMatch(/^convx: error: -o: "csv" is not one of table, json, jsonl\n/);
    const data = await cli(['config', 'get', 'data', '--data', SAMPLES]);
    expect(data.code).toBe(2);
    expect(data.stderr).toMatch(/^convx: error: --data does not apply to convx config get\n/);
  });

  it('completion takes the flags that name a dataset or API, and no output flags', async () => {
    const help = await globalsOf(['completion']);
    for (const flag of ['--data', '--api', '--token-file', '--timeout', '--profile', '--plugin']) expect(help).toContain(flag);
    expect(help).not.toMatch(/--fields|--format|--wide/);
    const run = await cli(['completion', 'bash', '--fields', 'x']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^convx: error: --fields does not apply to convx completion\n/);
  });
});

describe('no command, or a group without its subcommand', () => {
  it('is a usage error: the help on stderr, exit 2; --help and help print it on stdout, exit 0', async () => {
    for (const argv of [[], ['data'], ['auth'], ['config']]) {
      const run = await cli(argv);
      expect([run.code, run.stdout], argv.join(' ')).toEqual([2, '']);
      expect(run.stderr, argv.join(' ')).toMatch(/^Usage: convx/);
      const asked = await cli([...argv, '--help']);
      expect([asked.code, asked.stdout, asked.stderr]).toEqual([0, run.stderr, '']);
    }
    expect((await cli(['help', 'data'])).stdout).toBe((await cli(['data', '--help'])).stdout);
  });

  it("a group's help ends with an example of each of its commands (the first that runs it)", async () => {
    for (const group of ['data', 'auth', 'config']) {
      const help = (await cli([group, '--help'])).stdout;
      const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
      const examples = help.slice(help.indexOf('\nExamples:\n') + '\nExamples:\n'.length).trimEnd().split('\n');
      // one a command, each running that command
      expect(examples.map((e) => members.find((c) => e.startsWith(`  convx ${c.name}`))?.name), group).toEqual(members.map((c) => c.name));
    }
  });
});

describe('"not found" is exit 3', () => {
  it('NotFoundError exits 3, and the global help lists 3 not found', async () => {
    expect(ExitCode.notFound).toBe(3);
    expect(new NotFoundError('x').exitCode).toBe(3);
    const help = await cli(['--help']);
    expect(help.stdout).toMatch(/Exit codes: 0 ok, 1 findings or an unexpected failure, 2 usage, data or output\nerror, 3 not found, 4 auth refused/);
  });

  it('an unknown order, contact or drill target, and an unset config key, exit 3 with nothing on stdout', async () => {
    for (const argv of [
      ['order', 'o-nope', '--data', SAMPLES],
      ['contact', 'nobody@example.com', '--data', SAMPLES],
      ['drill', 'k-11', '--data', SAMPLES],
      ['config', 'get', 'plugin'],
    ]) {
      const result = await kept(argv);
      expect(result.code, argv.join(' ')).toBe(3);
      expect(result.stdout).toBe('');
    }
    // An order that exists but is not a conversion is a finding: exit 1.
    expect((await kept(['order', 'o-37', '--data', SAMPLES])).code).toBe(1);
  });
});

describe('counts agree with their nouns', () => {
  it('a page of one conversion says "1-1 of 1 conversion"', async () => {
    const items = JSON.parse((await kept(['items', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '--all', '-o', 'json'])).stdout) as {
      conversions: { orderId: string }[];
    };
    const once = items.conversions.map((c) => c.orderId).find((id, _i, all) => all.filter((o) => o === id).length === 1)!;
    // (a busy machine may take over a second: the progress line, not the subject here, waits longer)
    const quiet = { CONVX_PROGRESS_DELAY_MS: '60000' };
    const result = await kept(['items', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '--order', once, '--no-color'], { tty: true, env: quiet });
    expect(result.stderr).toMatch(/^1-1 of 1 conversion, 2024-03-01\.\.2024-03-31$/m);
    const report = await kept(['report', '--data', SAMPLES, ...PERIOD, '-q', 'win-back', '--no-color'], { tty: true, env: quiet });
    expect(report.stderr).toMatch(/^1-1 of 1 source, /m);
  });

  it('data generate stopped by Ctrl-C or SIGTERM exits 130 or 143 and leaves neither its staging folder nor --out', async () => {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const root = tempDir();
      const out = join(root, 'big');
      const child = spawn(process.execPath, [BIN, 'data', 'generate', '--out', out, '--contacts', '500000', '--orders', '2000000', '--touches', '10000000'], { stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
      // Stopped once it writes: its staging folder (.big.tmp-PID) exists.
      const started = Date.now();
      while (!readdirSync(root).some((f) => f.startsWith('.big.tmp-')) && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 20));
      expect(readdirSync(root), signal).toEqual([`.big.tmp-${child.pid}`]);
      child.kill(signal);
      expect(await exited, signal).toBe(code);
      expect(readdirSync(root), signal).toEqual([]);
    }
  });

  it("a process that exits (Ctrl-C) while a statement runs interrupts it: it ends at once, not when the statement would have ended", async () => {
    // The built Database (dist/), as a command's, in a process that exits on SIGINT as bin/convx.js does;
    // its statement would run for hours, and Node's exit waits for a statement running on its pool.
    const dist = (file: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, '..', 'dist', 'local', file)).href);
    const script = join(tempDir(), 'long.mjs');
    writeFileSync(
      script,
      `const { Database } = await import(${dist('db.js')});
const { sql } = await import(${dist('sql.js')});
process.on('SIGINT', () => process.exit(130));
const db = await Database.open(':memory:', { threads: 1, reuse: true });
db.all(sql\`SELECT sum(hash(i)) AS s FROM range(1000000000000) t(i)\`).catch(() => undefined);
setTimeout(() => process.stdout.write('running\\n'), 200);
`,
    );
    for (let round = 0; round < 2; round++) {
      const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const signalled = Date.now();
      child.kill('SIGINT');
      // Without the interrupt it runs on: killed after 20 s, its status null.
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const status = await exited;
      clearTimeout(killer);
      expect(status, `round ${round}`).toBe(130);
      expect(Date.now() - signalled).toBeLessThan(10_000);
    }
  });

  it('data generate says "(1 row)"; it removes the staging folder a killed run into --out left (its process gone), never a running one\'s', async () => {
    const dir = tempDir();
    const out = join(dir, 'one');
    // a process gone (the largest pid Linux gives is 2^22), and this one's parent, alive
    mkdirSync(join(dir, '.one.tmp-4194303', 'orders'), { recursive: true });
    mkdirSync(join(dir, `.one.tmp-${process.ppid}`));
    mkdirSync(join(dir, '.other.tmp-4194303'));
    const result = await cli(['data', 'generate', '--out', out, '--contacts', '1', '--orders', '1', '--touches', '1']);
    expect(readdirSync(dir).sort()).toEqual([`.one.tmp-${process.ppid}`, '.other.tmp-4194303', 'one']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/\(1 row\)$/m);
    expect(result.stderr).not.toMatch(/\(1 rows\)/);
  });
});

describe('a missing --data is "not found: PATH", exit 2, for every command', () => {
  it.each([
    [['report', '--data', 'no-such-dir']],
    [['items', '--data', 'no-such-dir', ...PERIOD]],
    [['order', 'o-2', '--data', 'no-such.duckdb']],
    [['contact', 'c-11', '--data', 'no-such.duckdb']],
    [['drill', 'k-1', '--data', 'no-such-dir']],
  ])('%j', async (argv) => {
    const cwd = tempDir();
    const result = await cli(argv, { cwd, env: { CONVX_JWT_SECRET: 'x'.repeat(32) } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `convx: error: not found: ${argv[argv.indexOf('--data') + 1]}\nhint: --data names a dataset directory or a .duckdb file written by \`convx data import\`\n`,
    );
    expect(result.stdout).toBe('');
  });

  it('also from CONVX_DATA or a profile, each named in the hint, and for data check DIR', async () => {
    const result = await cli(['report'], { env: { CONVX_DATA: '/no/such/dataset' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^convx: error: not found: \/no\/such\/dataset\nhint: CONVX_DATA names a dataset directory/);
    const home = tempDir();
    expect((await cli(['config', 'set', 'data', '/no/such/dataset'], { env: { XDG_CONFIG_HOME: home } })).code).toBe(0);
    const profiled = await cli(['report'], { env: { XDG_CONFIG_HOME: home } });
    expect(profiled.stderr).toMatch(/^convx: error: not found: \/no\/such\/dataset\nhint: data of profile "default" names a dataset directory/);
    const check = await cli(['data', 'check', '/no/such/dataset']);
    expect(check.code).toBe(2);
    expect(check.stderr).toMatch(/^convx: error: not found: \/no\/such\/dataset\n/);
  });
});

describe('drill explains an empty result in its own words', () => {
  it('suggests convx drill TARGET with the period of the data', async () => {
    const result = await kept(['drill', 'k-1', '--data', SAMPLES, '--from', '2025-01-01', '--to', '2025-01-31']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`  try: convx drill k-1 --data ${SAMPLES} --from 2024-01-01 --to 2024-05-31\n`);
    expect(result.stderr).not.toContain('convx items');
    // without --from/--to drill's default period is named as such
    const fallback = await kept(['drill', 'k-1', '--data', SAMPLES], { now: '2026-11-23T12:00:00Z' });
    expect(fallback.stderr).toMatch(/\(no --from\/--to: the 30 days ending today, UTC\)/);
  });
});

describe("API mode's --all progress", () => {
  // The line's clock (setTimeout, Date.now) on fake timers: the seconds pass at once.
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A context whose backend reports fetched pages through openBackend's onPage, as ApiBackend does. */
  function fakeContext(env: Record<string, string>, format: string, progress: string[]) {
    let onPage: ((fetched: number, total: number) => void) | undefined;
    const ctx = {
      io: { stderrIsTTY: true, stdoutIsTTY: false, env },
      globals: { color: false },
      format,
      settings: { mode: 'api' },
      log: { progress: (m: string) => progress.push(m), done: () => undefined, info: () => undefined, warn: () => undefined },
      openBackend: async (options: { onPage?: (fetched: number, total: number) => void } = {}) => {
        onPage = options.onPage;
        return { close: async () => undefined } as unknown as Backend;
      },
    } as unknown as Context;
    const page = (fetched: number, total: number) => onPage?.(fetched, total);
    return { ctx, page };
  }

  it('shows the rows fetched on the delayed progress line: nothing in the first second, then "fetched N of M rows"', async () => {
    const lines: string[] = [];
    const { ctx, page } = fakeContext({}, 'csv', lines);
    await withBackend(
      ctx,
      async () => {
        page(1000, 5000);
        // well within the first second: the line's timer has had the time to run, and shows nothing yet
        await vi.advanceTimersByTimeAsync(300);
        expect(lines).toEqual([]);
        await vi.advanceTimersByTimeAsync(800);
        page(2000, 5000);
      },
      { progress: true },
    );
    expect(lines.at(-1)).toBe('fetched 2,000 of 5,000 rows (1 s)');
  });

  it('never in CI or with -o json', async () => {
    for (const [env, format] of [[{ CI: 'true' }, 'csv'], [{}, 'json']] as const) {
      const lines: string[] = [];
      const { ctx, page } = fakeContext(env, format, lines);
      await withBackend(
        ctx,
        async () => {
          await vi.advanceTimersByTimeAsync(1100);
          page(2000, 5000);
        },
        { progress: true },
      );
      expect(lines).toEqual([]);
    }
  });
});

describe('the order search of an API without the look-up by id', () => {
  it('counts back from the clock of the context, and says how far it has got', async () => {
    const scripted = createServer((req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '').split('?')[0]!;
      if (path.startsWith('/v1/conversions/orders/')) {
        res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ status: 404, detail: `no route for GET ${path}` }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ conversions: [], paging: { start: 0, count: 0, totalCount: 0 } }));
    });
    await new Promise<void>((resolve) => scripted.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(scripted.address() as AddressInfo).port}/v1`;
      const result = await cli(['order', 'o-9', '--api', url], { env: { CONVX_TOKEN: 'token' }, now: '2030-06-15T12:00:00Z' });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^order o-9: not in 2029-06-16\.\.2030-06-15; searching the year before$/m);
      expect(result.stderr).toMatch(/order o-9 is not among the API's conversions of \d{4}-\d{2}-\d{2}\.\.2030-06-15 /);
      const quiet = await cli(['order', 'o-9', '--api', url, '--quiet'], { env: { CONVX_TOKEN: 'token' }, now: '2030-06-15T12:00:00Z' });
      expect(quiet.stderr).not.toMatch(/searching the year before/);
    } finally {
      await new Promise((resolve) => scripted.close(resolve));
    }
  });
});
