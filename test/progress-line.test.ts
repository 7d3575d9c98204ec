/**
 * The progress line (startProgress, src/commands/shared.ts): on a terminal's stderr only, after a
 * second of work, with the seconds taken, cleared before the summary; never in pipes, with -o json,
 * in CI or with --quiet. Its clock is checked on fake timers; the built binary runs under `script`
 * (a real terminal) with the delay set to 0 (CONVX_PROGRESS_DELAY_MS), so that work of any length
 * would show the line, on the samples and on a dataset of just over 10,000 records (the writer
 * counts them every 10,000).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { PROGRESS_DELAY_MS, startProgress } from '../src/commands/shared.js';
import type { Context } from '../src/context.js';
import { generateDataset } from '../src/local/generate.js';
import { REPORT_COLUMNS } from '../src/output/columns.js';
import { SAMPLES, suiteThreads, tempDir } from './helpers.js';

describe("the progress line's clock", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** What startProgress reads of a context; `lines` records each drawing, and "(cleared)" for each clear. */
  function terminal(env: Record<string, string> = {}, { format = 'csv', quiet = false, stderrIsTTY = true } = {}) {
    const lines: string[] = [];
    const ctx = {
      io: { stderrIsTTY, stdoutIsTTY: false, env },
      globals: { quiet },
      format,
      log: { progress: (m: string) => lines.push(m), done: () => lines.push('(cleared)') },
    } as unknown as Context;
    return { ctx, lines };
  }

  it('shows nothing in the first second, then the phase with the whole seconds taken, redrawn every second until done', () => {
    expect(PROGRESS_DELAY_MS).toBe(1000);
    const { ctx, lines } = terminal();
    const progress = startProgress(ctx);
    progress.phase('reading and checking the dataset');
    vi.advanceTimersByTime(999);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(lines).toEqual(['reading and checking the dataset (1 s)']);
    // a phase after the delay is drawn at once
    progress.phase('attributing conversions');
    expect(lines.at(-1)).toBe('attributing conversions (1 s)');
    vi.advanceTimersByTime(1000);
    expect(lines.at(-1)).toBe('attributing conversions (2 s)');
    // clear() takes the line away until the next phase
    progress.clear();
    expect(lines.at(-1)).toBe('(cleared)');
    progress.phase('writing 5 records');
    expect(lines.at(-1)).toBe('writing 5 records (2 s)');
    progress.done();
    expect(lines.at(-1)).toBe('(cleared)');
    const drawn = lines.length;
    vi.advanceTimersByTime(5000);
    progress.phase('too late');
    expect(lines).toHaveLength(drawn);
    expect(lines.join('\n')).not.toContain('(0 s)');
  });

  it('work done within the delay prints nothing; CONVX_PROGRESS_DELAY_MS moves the delay', () => {
    const quick = terminal();
    const progress = startProgress(quick.ctx);
    progress.phase('reading and checking the dataset');
    vi.advanceTimersByTime(900);
    progress.done();
    vi.advanceTimersByTime(5000);
    expect(quick.lines).toEqual([]);

    // a whole number of ms moves it; anything else leaves the default second
    for (const [setting, delay] of [['2500', 2500], ['0.5', 1000], ['soon', 1000]] as const) {
      const { ctx, lines } = terminal({ CONVX_PROGRESS_DELAY_MS: setting });
      startProgress(ctx).phase('typing the tables');
      vi.advanceTimersByTime(delay - 1);
      expect(lines, setting).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(lines, setting).toEqual([`typing the tables (${Math.floor(delay / 1000)} s)`]);
    }
  });

  it('never without a terminal on stderr, with -o json or jsonl, in CI or with --quiet', () => {
    for (const [env, options] of [
      [{}, { stderrIsTTY: false }],
      [{}, { format: 'json' }],
      [{}, { format: 'jsonl' }],
      [{ CI: 'true' }, {}],
      [{}, { quiet: true }],
    ] as const) {
      const { ctx, lines } = terminal(env, options);
      const progress = startProgress(ctx);
      progress.phase('attributing conversions');
      vi.advanceTimersByTime(3000);
      progress.done();
      expect(lines, JSON.stringify([env, options])).toEqual([]);
    }
    // CI set to "", "0" or "false" is not CI
    for (const CI of ['', '0', 'false']) {
      const { ctx, lines } = terminal({ CI });
      startProgress(ctx).phase('attributing conversions');
      vi.advanceTimersByTime(1000);
      expect(lines, CI).toEqual(['attributing conversions (1 s)']);
    }
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
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: tempDir('convx-home-'), TERM: 'xterm', ...suiteThreads(), ...options.env };
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
/** The line shows as soon as there is work: any command that could print it does. */
const AT_ONCE = { CONVX_PROGRESS_DELAY_MS: '0' };

describe.skipIf(!hasScript)('progress on a terminal', () => {
  // About 11,000 records: the writer counts the first 10,000. Parquet: each of the three runs over it reads it faster than CSV.
  let big = '';
  const period = ['--from', '2024-01-01', '--to', '2024-06-30'];
  beforeAll(async () => {
    big = join(tempDir(), 'big');
    await generateDataset({ out: big, seed: 7, contacts: 5000, orders: 15000, touches: 75000, from: '2024-01-01', to: '2024-06-30', format: 'parquet', plugins: 1 });
  }, 120_000);

  it('shows the phases with the time taken, and clears the line before the summary', async () => {
    const out = join(tempDir(), 'report.csv');
    const run = await convx(['report', '--data', SAMPLES, ...period, '-o', 'csv'], { tty: true, stdoutFile: out, env: AT_ONCE });
    expect(run.code).toBe(0);
    // Under script, the terminal's output (here stderr only) arrives on script's stdout.
    expect(run.stdout).toMatch(/\r\x1b\[2K(reading and checking the dataset|attributing conversions) \(\d+ s\)/);
    expect(run.stdout.endsWith(CLEAR)).toBe(true);
    expect(readFileSync(out, 'utf8').split('\n')[0]).toBe(REPORT_COLUMNS.join(','));
    expect(readFileSync(out, 'utf8')).not.toContain('\x1b');
  }, 120_000);

  it('counts the records --all writes when stdout is a file', async () => {
    const out = join(tempDir(), 'items.csv');
    const run = await convx(['items', '--data', big, ...period, '--all', '-o', 'csv'], { tty: true, stdoutFile: out, env: AT_ONCE });
    expect(run.code).toBe(0);
    const records = readFileSync(out, 'utf8').trim().split('\n').length - 1;
    expect(records).toBeGreaterThan(10_000);
    const total = records.toLocaleString('en-US');
    expect(run.stdout).toContain(`${CLEAR}writing 10,000 of ${total} records (`);
    // The line is cleared for good: nothing follows the last clear.
    expect(run.stdout.endsWith(CLEAR)).toBe(true);
  }, 120_000);

  it('data check names its phases too, and prints its result after clearing the line', async () => {
    const run = await convx(['data', 'check', SAMPLES, '--no-color'], { tty: true, env: AT_ONCE });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\r\x1b\[2K(reading and checking the files|typing the tables|checking integrity across tables) \(\d+ s\)/);
    expect(run.stdout).toMatch(/\r\x1b\[2Ktable  orders   orders\.csv \(\d+ rows, 2024-01-01T/);
  }, 120_000);

  it('data import names its phases on the same delayed line, and not in CI', async () => {
    const into = (name: string) => join(tempDir(), name);
    const run = await convx(['data', 'import', SAMPLES, '--into', into('a.duckdb'), '--no-color'], { tty: true, env: AT_ONCE });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\r\x1b\[2K[a-z][^\r]* \(\d+ s\)/);
    // the summary follows a cleared line
    expect(run.stdout).toMatch(/\r\x1b\[2Kwrote .*a\.duckdb/);
    const ci = await convx(['data', 'import', SAMPLES, '--into', into('b.duckdb'), '--no-color'], { tty: true, env: { ...AT_ONCE, CI: 'true' } });
    expect(ci.code).toBe(0);
    expect(ci.stdout).not.toContain('\x1b[2K');
  }, 120_000);

  it('never in pipes, with -o json, in CI or with --quiet', async () => {
    const runs = await Promise.all([
      convx(['report', '--data', SAMPLES, ...period, '-o', 'csv'], { tty: false, env: AT_ONCE }),
      // --all writes over 10,000 records: enough to count them, were it allowed.
      convx(['items', '--data', big, ...period, '--all', '-o', 'json'], { tty: true, stdoutFile: join(tempDir(), 'r.json'), env: AT_ONCE }),
      convx(['items', '--data', big, ...period, '--all', '-o', 'csv'], { tty: true, stdoutFile: join(tempDir(), 'r.csv'), env: { ...AT_ONCE, CI: 'true' } }),
      convx(['report', '--data', SAMPLES, ...period, '-o', 'csv', '--quiet'], { tty: true, stdoutFile: join(tempDir(), 'q.csv'), env: AT_ONCE }),
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
