/**
 * Issue 22, point 10: errors and findings that read as English. A date that is not one says
 * why (the month's length), a negative --max-warnings names its bound, -o takes a format name in any
 * case (as codes are), and a count of one recipient gets the singular verb.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dateProblem } from '../src/model/query.js';
import { cli, SAMPLES } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const WELCOME = join(SAMPLES, '..', 'deliveries', 'welcome.json');

/** The command is a usage error (exit 2, nothing on stdout) saying exactly this. */
async function refused(argv: string[], message: string): Promise<void> {
  const result = await cli(argv);
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr).toBe(`convx: error: ${message}\n`);
}

/** samples/shop opened once (and once for validation) and lent to the commands that print from it (kept-backends.ts); the refused ones open nothing. */
const kept = keptBackends();

describe('a date that is not one', () => {
  it.each([
    ['2024-02-30', '"2024-02-30" is not a date: February 2024 has 29 days'],
    ['2023-02-29', '"2023-02-29" is not a date: February 2023 has 28 days'],
    ['2024-04-31', '"2024-04-31" is not a date: April 2024 has 30 days'],
    ['2024-04-00', '"2024-04-00" is not a date: April 2024 has 30 days'],
    ['2024-13-01', '"2024-13-01" is not a date: the months are 01 to 12'],
    ['2024-3-1', '"2024-3-1" is not a date of the form YYYY-MM-DD'],
  ])('%s', (value, message) => {
    expect(dateProblem(value)).toBe(message);
  });

  it('is valid when it is a date', () => {
    expect(dateProblem('2024-02-29')).toBeUndefined();
  });

  it('names the length of the month on the command line', async () => {
    await refused(['report', '--data', SAMPLES, '--from', '2024-02-30'], '--from: "2024-02-30" is not a date: February 2024 has 29 days');
  });
});

describe('--max-warnings', () => {
  it('below 0 says it must be 0 or more (exit 2)', async () => {
    for (const argv of [['--max-warnings', '-1'], ['--max-warnings=-1']]) {
      await refused(['validate', WELCOME, '--data', SAMPLES, ...argv], '--max-warnings: "-1" must be 0 or more');
    }
  });

  it('that is no number still says so', async () => {
    await refused(['validate', WELCOME, '--data', SAMPLES, '--max-warnings', 'x'], '--max-warnings: "x" is not a whole number');
  });
});

describe('-o in any case', () => {
  it('takes TSV, Json, Markdown and GitHub as tsv, json, markdown and github', async () => {
    const period = ['--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
    for (const [typed, format] of [['TSV', 'tsv'], ['Json', 'json'], ['CSV', 'csv'], ['Markdown', 'markdown']]) {
      const upper = await kept(['report', ...period, '-o', typed!]);
      const lower = await kept(['report', ...period, '-o', format!]);
      expect(upper.code, upper.stderr).toBe(0);
      expect(upper.stdout).toBe(lower.stdout);
    }
    const github = await kept(['validate', WELCOME, '--data', SAMPLES, '--format', 'GitHub']);
    expect(github.stdout).toBe((await kept(['validate', WELCOME, '--data', SAMPLES, '-o', 'github'])).stdout);
  });

  it('still refuses a name no format has, quoted as typed', async () => {
    await refused(['report', '--data', SAMPLES, '-o', 'XML'], '-o: "XML" is not one of table, json, jsonl, csv, tsv, html, markdown');
  });
});

describe('a count of recipients', () => {
  it('gets the verb of its number', async () => {
    const result = await kept(['validate', join(SAMPLES, '..', 'deliveries', 'defect-missing-subject.json'), '--data', SAMPLES, '-o', 'json']);
    const messages: string[] = JSON.parse(result.stdout).render.warnings.map((w: { message: string }) => w.message);
    const fallbacks = messages.filter((m) => m.includes('which has no language'));
    expect(fallbacks.length).toBeGreaterThan(0);
    for (const message of fallbacks) expect(message).toMatch(/^(1 recipient in language \w+ gets|([02-9]|\d\d+) recipients in language \w+ get) /);
    expect(fallbacks).toContain('1 recipient in language cs gets inline:0, which has no language');
  });
});
