/**
 * Issue 12, items 2 and 4: an empty result explains itself on stderr (period, filters, the dates the
 * data holds, a command that finds something) while stdout stays what the format prints for no rows;
 * `data check` prints each table's date range; a progress line appears on a terminal's stderr only,
 * after a second of work, never in pipes, with -o json, in CI or with --quiet.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDataset } from '../src/local/generate.js';
import { ITEM_COLUMNS, REPORT_COLUMNS } from '../src/output/columns.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, csv, dataset, SAMPLES, shop, tempDir } from './helpers.js';

/** Far after the samples (January to May 2024): the default period holds nothing. */
const NOW = '2026-11-23T12:00:00Z';
/** The empty document, whose paging names the version of the data (a hash of its files). */
const EMPTY_JSON = /^\{\n {2}"conversions": \[\],\n {2}"paging": \{\n {4}"start": 0,\n {4}"count": 0,\n {4}"totalCount": 0,\n {4}"dataVersion": "[\w-]{22}"\n {2}\}\n\}\n$/;
/** What samples/shop holds (data check prints the instants, the hint their days). */
const SAMPLE_RANGES = 'the dataset holds orders from 2024-01-01 to 2024-05-14 and touches from 2023-11-27 to 2024-04-30 (UTC)';

/** The command after "try: " or "without the filters: " in a hint, as argv (its words are plain or single-quoted). */
function suggested(stderr: string, label: string): string[] {
  const line = stderr.split('\n').find((l) => l.trimStart().startsWith(`${label}: convx `));
  expect(line, stderr).toBeDefined();
  const words = line!.trimStart().slice(label.length + 2).match(/'[^']*'|\S+/g)!;
  return words.slice(1).map((w) => (w.startsWith("'") ? w.slice(1, -1) : w));
}

describe('an empty result explains itself', () => {
  it('report without dates: stdout is the empty document, stderr the period, the data range and a command that finds rows', async () => {
    const run = await cli(['report', '--data', SAMPLES, '-o', 'json'], { now: NOW });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(EMPTY_JSON);
    expect(run.stderr).toContain('No sources in 2026-10-25..2026-11-23 (no --from/--to: the 30 days ending today, UTC).');
    expect(run.stderr).toContain(SAMPLE_RANGES);
    const argv = suggested(run.stderr, 'try');
    expect(argv).toEqual(['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-05-31']);
    const tried = await cli([...argv, '-o', 'json'], { now: NOW });
    expect(JSON.parse(tried.stdout).conversions.length).toBeGreaterThan(0);
  });

  it('every format keeps its empty output on stdout; the hint goes to stderr', async () => {
    const formats: [string, string][] = [
      ['csv', `${REPORT_COLUMNS.join(',')}\n`],
      ['tsv', `${REPORT_COLUMNS.join('\t')}\n`],
      ['jsonl', ''],
      ['table', ''],
    ];
    for (const [format, stdout] of formats) {
      const run = await cli(['report', '--data', SAMPLES, '-o', format], { now: NOW });
      expect(run.stdout, format).toBe(stdout);
      expect(run.stderr, format).toContain(SAMPLE_RANGES);
    }
    const all = await cli(['report', '--data', SAMPLES, '--all', '-o', 'json'], { now: NOW });
    expect(all.stdout).toMatch(EMPTY_JSON);
    expect(all.stderr).toContain('try: convx report');
  });

  it('--quiet leaves the hint out (and the stdout as it is)', async () => {
    const run = await cli(['report', '--data', SAMPLES, '-o', 'json', '--quiet'], { now: NOW });
    expect(run.stdout).toMatch(EMPTY_JSON);
    expect(run.stderr).toBe('');
  });

  it('names the filters as flags, and suggests the same period without them when the period holds data', async () => {
    const run = await cli(['items', '--data', SAMPLES, '--from', '2024-02-01', '--to', '2024-02-29', '--contact', 'no one', '--country', 'CZ', '-o', 'csv']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${ITEM_COLUMNS.join(',')}\n`);
    expect(run.stderr).toContain('No conversions in 2024-02-01..2024-02-29.');
    expect(run.stderr).toContain("filters: --contact 'no one' --country CZ");
    const argv = suggested(run.stderr, 'without the filters');
    expect(argv).toEqual(['items', '--data', SAMPLES, '--from', '2024-02-01', '--to', '2024-02-29']);
    expect((await cli([...argv, '-o', 'jsonl'])).stdout.trim().split('\n').length).toBeGreaterThan(10);
  });

  it('keeps the filters and moves the period onto the data when the period is outside it', async () => {
    const run = await cli(['items', '--data', SAMPLES, '--from', '2025-01-01', '--to', '2025-01-31', '--source', 'k-1', '--all', '-o', 'jsonl']);
    expect(run.stdout).toBe('');
    const argv = suggested(run.stderr, 'try');
    expect(argv).toEqual(['items', '--data', SAMPLES, '--source', 'k-1', '--from', '2024-01-01', '--to', '2024-05-31']);
    const records = (await cli([...argv, '-o', 'jsonl', '--all'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((r) => r.source.id === 'k-1')).toBe(true);
  });

  it('says when the period holds orders but none is attributed, and when a table is empty', async () => {
    const noClick = shop({ orders: [{ id: 'o1', at: '2024-03-10T10:00:00Z' }], touches: [{ at: '2024-01-01T00:00:00Z' }] });
    const run = await cli(['report', '--data', noClick, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
    expect(run.stdout).toMatch(EMPTY_JSON);
    expect(run.stderr).toContain('orders from 2024-03-10 to 2024-03-10 and touches from 2024-01-01 to 2024-01-01');
    expect(run.stderr).toMatch(/no order in this period is attributed to a source \(each needs a click in the 30 days before it/);
    const noOrders = shop({ orders: [], touches: [{ at: '2024-01-01T00:00:00Z' }] });
    // Without orders, no currency says what to report in: --reference-currency does.
    const none = await cli(['report', '--data', noOrders, '--reference-currency', 'EUR', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
    expect(none.stdout).toMatch(EMPTY_JSON);
    expect(none.stderr).toContain('the dataset holds no orders, and touches from 2024-01-01 to 2024-01-01 (UTC)');
    expect(none.stderr).not.toContain('try:');
  });

  it("gives the plugin's own range, from a directory and from an imported file", async () => {
    const dir = dataset({
      'orders.csv': csv(
        ['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'],
        [
          ['A', 'oa', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
          ['B', 'ob', 'c1', '2024-07-02T10:00:00Z', 'EUR', 20, 24],
        ],
      ),
      'touches.csv': csv(
        ['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'],
        [
          ['A', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k'],
          ['B', 'c1', '2024-07-01T00:00:00Z', 'click', 'campaign', 'k'],
        ],
      ),
    });
    const file = join(tempDir(), 'two.duckdb');
    expect((await cli(['data', 'import', dir, '--into', file])).code).toBe(0);
    for (const data of [dir, file]) {
      const run = await cli(['report', '--data', data, '--plugin', 'B', '--from', '2024-01-01', '--to', '2024-01-31', '-o', 'json']);
      expect(run.stdout).toMatch(EMPTY_JSON);
      expect(run.stderr, data).toContain('orders from 2024-07-02 to 2024-07-02 and touches from 2024-07-01 to 2024-07-01');
      expect(suggested(run.stderr, 'try')).toEqual(['report', '--data', data, '--plugin', 'B', '--from', '2024-07-01', '--to', '2024-07-31']);
    }
  });

  describe('API mode', () => {
    let server: RunningServer;
    let token = '';
    beforeAll(async () => {
      server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: 'empty-secret' }, log: () => undefined, version: 'test' });
      token = await signDevelopmentToken('empty-secret', 'shop', '1h');
    });
    afterAll(async () => {
      await server?.close();
    });

    it("says what the API can tell: its conversions' range, and a command over it", async () => {
      const api = `${server.url}/v1`;
      const run = await cli(['report', '--api', api, '-o', 'json'], { now: NOW, env: { CONVX_TOKEN: token } });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(EMPTY_JSON);
      expect(run.stderr).toContain("the API's conversions run from 2024-01-01 to 2024-05-14 (UTC)");
      expect(run.stderr).not.toContain('the dataset holds');
      expect(suggested(run.stderr, 'try')).toEqual(['report', '--api', api, '--from', '2024-01-01', '--to', '2024-05-31']);
      expect(run.stderr).not.toContain(token);
    });
  });
});

describe('data check prints the date range of orders, touches and fx', () => {
  it('in text and in -o json, from a directory and an imported file', async () => {
    const file = join(tempDir(), 'shop.duckdb');
    expect((await cli(['data', 'import', SAMPLES, '--into', file])).code).toBe(0);
    for (const data of [SAMPLES, file]) {
      const text = await cli(['data', 'check', data]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain('orders   orders.csv (414 rows, 2024-01-01T07:44:10.438Z to 2024-05-14T02:13:52.720Z)');
      expect(text.stdout).toContain('touches  touches.csv (4000 rows, 2023-11-27T01:42:26.131Z to 2024-04-30T22:16:53.432Z)');
      expect(text.stdout).toContain('fx       fx.csv (408 rows, 2023-12-22 to 2024-06-28)');
      expect(text.stdout).toMatch(/sources +sources\.csv \(16 rows\)\n/);
      const json = JSON.parse((await cli(['data', 'check', data, '-o', 'json'])).stdout);
      const byName = Object.fromEntries(json.tables.map((t: { table: string }) => [t.table, t]));
      expect(byName.orders).toMatchObject({ rows: 414, from: '2024-01-01T07:44:10.438Z', to: '2024-05-14T02:13:52.720Z' });
      expect(byName.touches).toMatchObject({ from: '2023-11-27T01:42:26.131Z', to: '2024-04-30T22:16:53.432Z' });
      expect(byName.fx).toMatchObject({ from: '2023-12-22', to: '2024-06-28' });
      expect(byName.sources).not.toHaveProperty('from');
    }
  });

  it('an empty table has null bounds', async () => {
    const dir = shop({ orders: [], touches: [{ at: '2024-01-01T00:00:00Z' }] });
    const json = JSON.parse((await cli(['data', 'check', dir, '-o', 'json'])).stdout);
    expect(json.tables.find((t: { table: string }) => t.table === 'orders')).toMatchObject({ rows: 0, from: null, to: null });
    expect((await cli(['data', 'check', dir])).stdout).toMatch(/orders +orders\.csv \(0 rows\)\n/);
  });
});

const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');
const hasScript = existsSync('/usr/bin/script');

interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built binary; with tty, under `script` so that its stderr (and stdout, unless redirected) is a terminal. */
function convx(args: string[], options: { tty: boolean; env?: Record<string, string>; stdoutFile?: string }): Promise<Spawned> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: tempDir('convx-home-'), TERM: 'xterm', ...options.env };
  const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;
  const line = [process.execPath, BIN, ...args].map(quote).join(' ') + (options.stdoutFile ? ` > ${quote(options.stdoutFile)}` : '');
  const [command, argv] = options.tty ? ['script', ['-qec', line, '/dev/null']] : [process.execPath, [BIN, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv as string[], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end();
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const CLEAR = '\r\x1b[2K';

describe.skipIf(!hasScript)('progress on a terminal', () => {
  // About 60,000 orders and 300,000 touches: a report takes a few seconds.
  let big = '';
  const period = ['--from', '2024-01-01', '--to', '2024-06-30'];
  beforeAll(async () => {
    big = join(tempDir(), 'big');
    await generateDataset({ out: big, seed: 7, contacts: 20000, orders: 60000, touches: 300000, from: '2024-01-01', to: '2024-06-30', format: 'csv', plugins: 1 });
  }, 120_000);

  it('shows the phases after a second, with the time taken, and clears the line before the summary', async () => {
    const out = join(tempDir(), 'report.csv');
    const run = await convx(['report', '--data', big, ...period, '-o', 'csv'], { tty: true, stdoutFile: out });
    expect(run.code).toBe(0);
    // Under script, the terminal's output (here stderr only) arrives on script's stdout.
    expect(run.stdout).toMatch(/\r\x1b\[2K(reading and checking the dataset|attributing conversions) \(\d+ s\)/);
    expect(run.stdout).not.toContain('(0 s)');
    expect(readFileSync(out, 'utf8').split('\n')[0]).toBe(REPORT_COLUMNS.join(','));
    expect(readFileSync(out, 'utf8')).not.toContain('\x1b');
  }, 120_000);

  it('counts the records --all writes when stdout is a file', async () => {
    const out = join(tempDir(), 'items.csv');
    const run = await convx(['items', '--data', big, ...period, '--all', '-o', 'csv'], { tty: true, stdoutFile: out });
    expect(run.code).toBe(0);
    const records = readFileSync(out, 'utf8').trim().split('\n').length - 1;
    expect(records).toBeGreaterThan(20_000);
    const total = records.toLocaleString('en-US');
    expect(run.stdout).toContain(`${CLEAR}writing 10,000 of ${total} records (`);
    // The line is cleared for good: nothing follows the last clear.
    expect(run.stdout.endsWith(CLEAR)).toBe(true);
  }, 120_000);

  it('data check names its phases too, and prints its result after clearing the line', async () => {
    // A check of this data takes about a second: the line is asked for sooner, so that it shows on a fast machine too.
    const run = await convx(['data', 'check', big, '--no-color'], { tty: true, env: { CONVX_PROGRESS_DELAY_MS: '200' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\r\x1b\[2K(reading and checking the files|typing the tables|checking integrity across tables) \(\d+ s\)/);
    expect(run.stdout).toMatch(/\r\x1b\[2Ktable  orders   orders\.csv \(\d+ rows, 2024-01-01T/);
  }, 120_000);

  it('data import names its phases on the same delayed line, and not in CI', async () => {
    const into = (name: string) => join(tempDir(), name);
    const run = await convx(['data', 'import', big, '--into', into('a.duckdb'), '--no-color'], { tty: true, env: { CONVX_PROGRESS_DELAY_MS: '200' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\r\x1b\[2K[a-z][^\r]* \(\d+ s\)/);
    // the summary follows a cleared line
    expect(run.stdout).toMatch(/\r\x1b\[2Kwrote .*a\.duckdb/);
    const ci = await convx(['data', 'import', big, '--into', into('b.duckdb'), '--no-color'], { tty: true, env: { CONVX_PROGRESS_DELAY_MS: '200', CI: 'true' } });
    expect(ci.code).toBe(0);
    expect(ci.stdout).not.toContain('\x1b[2K');
  }, 120_000);

  it('never in pipes, with -o json, in CI or with --quiet', async () => {
    const runs = await Promise.all([
      convx(['report', '--data', big, ...period, '-o', 'csv'], { tty: false }),
      // --all writes tens of thousands of records: enough to count them, were it allowed.
      convx(['items', '--data', big, ...period, '--all', '-o', 'json'], { tty: true, stdoutFile: join(tempDir(), 'r.json') }),
      convx(['items', '--data', big, ...period, '--all', '-o', 'csv'], { tty: true, stdoutFile: join(tempDir(), 'r.csv'), env: { CI: 'true' } }),
      convx(['report', '--data', big, ...period, '-o', 'csv', '--quiet'], { tty: true, stdoutFile: join(tempDir(), 'q.csv') }),
    ]);
    for (const [i, run] of runs.entries()) {
      expect(run.code, `run ${i}: ${run.stderr}`).toBe(0);
      expect(run.stdout + run.stderr, `run ${i}`).not.toContain('\x1b[2K');
      expect(run.stdout + run.stderr, `run ${i}`).not.toMatch(/reading and checking|attributing conversions|records \(|rows/);
    }
    expect(runs[0]!.stdout.split('\n')[0]).toBe(REPORT_COLUMNS.join(','));
  }, 180_000);

  it('quick work prints no progress line at all', async () => {
    // Work done before the delay prints nothing: the samples take about half a second, so the
    // delay is set well above it, that a busy machine does not make the work slow enough.
    const small = await convx(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv'], {
      tty: true,
      stdoutFile: join(tempDir(), 's.csv'),
      env: { CONVX_PROGRESS_DELAY_MS: '8000' },
    });
    expect(small.code).toBe(0);
    expect(small.stdout).not.toContain('reading and checking');
  }, 60_000);
});
