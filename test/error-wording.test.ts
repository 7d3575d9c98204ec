/**
 * Issue 22, point 10: errors and findings that read as English. A date that is not one says
 * why (the month's length), a negative --max-warnings names its bound, -o takes a format name in any
 * case (as codes are), and a count of one recipient gets the singular verb. A dataset is named in
 * messages as the user gave it (`--data shop`), not by the absolute path convx reads it by.
 */
import { existsSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dateProblem } from '../src/model/query.js';
import { cli, dataset, SAMPLES } from './helpers.js';
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

describe('--timeout', () => {
  it('of 0 says it must be more than 0 (0 is a number of seconds); a text is none', async () => {
    await refused(['report', '--api', 'http://127.0.0.1:9', '--timeout', '0'], '--timeout: must be more than 0 seconds, not 0');
    await refused(['report', '--api', 'http://127.0.0.1:9', '--timeout', 'soon'], '--timeout: "soon" is not a number of seconds');
  });
});

describe('a delivery API alone', () => {
  it('is no API mode: the message says the reporting API is needed too, from a flag or from the environment', async () => {
    const request = join(SAMPLES, '..', 'deliveries', 'welcome.json');
    const flag = await cli(['validate', request, '--delivery-api', 'http://127.0.0.1:9/v4']);
    expect([flag.code, flag.stderr.split('\n')[0]]).toEqual([2, 'convx: error: --delivery-api works in API mode only, and this runs in local mode (no --api names the reporting API)']);
    const env = await cli(['validate', request], { env: { CONVX_DELIVERY_API_URL: 'http://127.0.0.1:9/v4', CONVX_TOKEN: 'a-token-of-some-length-0123456789' } });
    expect([env.code, env.stderr]).toEqual([
      2,
      'convx: error: no dataset and no --api: a delivery API alone does not make API mode; pass --api URL (the reporting API) too, or --data DIR\nhint: CONVX_API_URL sets --api as CONVX_DELIVERY_API_URL sets --delivery-api\n',
    ]);
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

describe('a dataset is named as it was given', () => {
  /** A folder "my shop" (a space: hints quote it for the shell) inside a new working directory, with these files. */
  function shop(files: Record<string, string>): { cwd: string; abs: string } {
    const cwd = dataset({});
    const abs = join(cwd, 'my shop');
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(abs, path)), { recursive: true });
      writeFileSync(join(abs, path), content);
    }
    return { cwd, abs };
  }
  const ORDERS = 'plugin_id,order_id,contact_id,datetime,currency,amount_wo_tax,amount_w_tax,status\n';
  const TOUCHES = 'plugin_id,contact_id,datetime,touch,source_type,source_id\n';
  const order = (plugin: string, datetime = '2024-01-05T10:00:00.000Z') => `${plugin},o-${plugin},c-1,${datetime},EUR,10,12,completed\n`;
  const touch = (plugin: string) => `${plugin},c-1,2024-01-02T10:00:00.000Z,click,campaign,k-1\n`;

  /** What argv run in cwd prints; the absolute path never appears in it. */
  async function stderrOf(argv: string[], cwd: string, abs: string): Promise<{ code: number; stdout: string; stderr: string }> {
    const result = await cli(argv, { cwd });
    expect(result.stderr + result.stdout).not.toContain(abs);
    return result;
  }

  it('in the errors of reading it: values, a missing table, plugins to choose from, ambiguous files (report, data check)', async () => {
    const bad = shop({ 'orders.csv': ORDERS + order('p-a', '2024-13-01T00:00:00.000Z'), 'touches.csv': TOUCHES + touch('p-a') });
    const values = await stderrOf(['report', '--data', 'my shop', '--from', '2024-01-01', '--to', '2024-01-31'], bad.cwd, bad.abs);
    expect(values.code).toBe(2);
    expect(values.stderr).toContain("convx: error: the dataset at my shop has 1 problem (run `convx data check 'my shop'` for integrity findings too):\n");
    const checked = await stderrOf(['data', 'check', 'my shop'], bad.cwd, bad.abs);
    expect(checked.stdout).toContain('my shop: 1 problem');

    // a name that begins with "-" is written ./-name in a command a hint gives (else read as a flag)
    const dashed = shop({ 'orders.csv': ORDERS + order('p-a', '2024-13-01T00:00:00.000Z'), 'touches.csv': TOUCHES + touch('p-a') });
    renameSync(dashed.abs, join(dashed.cwd, '-shop'));
    expect((await cli(['report', '--data=-shop', '--from', '2024-01-01', '--to', '2024-01-31'], { cwd: dashed.cwd })).stderr).toContain('(run `convx data check ./-shop` for integrity findings too)');
    expect((await cli(['data', 'check', '--', '-shop'], { cwd: dashed.cwd })).stdout).toContain('-shop: 1 problem');

    const noTouches = shop({ 'orders.csv': ORDERS + order('p-a') });
    const missing = await stderrOf(['report', '--data', './my shop', '--from', '2024-01-01', '--to', '2024-01-31'], noTouches.cwd, noTouches.abs);
    expect(missing.stderr).toMatch(/^convx: error: the dataset at \.\/my shop has no touches table: /);

    const two = shop({ 'orders.csv': ORDERS + order('p-a') + order('p-b'), 'touches.csv': TOUCHES + touch('p-a') });
    const plugins = await stderrOf(['report', '--data', 'my shop', '--from', '2024-01-01', '--to', '2024-01-31'], two.cwd, two.abs);
    expect(plugins.stderr).toContain('convx: error: the dataset at my shop holds 2 plugins (p-a, p-b); choose one with --plugin');

    const both = shop({ 'orders.csv': ORDERS + order('p-a'), 'orders.parquet': 'x', 'touches.csv': TOUCHES + touch('p-a') });
    for (const argv of [['report', '--data', 'my shop', '--from', '2024-01-01', '--to', '2024-01-31'], ['data', 'import', 'my shop', '--into', 'x.duckdb'], ['data', 'check', 'my shop']]) {
      const ambiguous = await stderrOf(argv, both.cwd, both.abs);
      expect(ambiguous.stderr + ambiguous.stdout, argv.join(' ')).toContain('the dataset at my shop is ambiguous or incomplete:');
    }
  });

  it('by convx serve: a dataset given bounds of plugin files, a folder of .duckdb files it cannot serve (its hint quoted)', async () => {
    const env = { CONVX_JWT_SECRET: 'a-secret-that-is-long-enough-for-the-server' };
    const { cwd, abs } = shop({ 'orders.csv': ORDERS + order('p-a'), 'touches.csv': TOUCHES + touch('p-a') });
    const bounded = await cli(['serve', '--data', 'my shop', '--port', '0', '--max-open-plugins', '3'], { cwd, env });
    expect(bounded.code).toBe(2);
    expect(bounded.stderr).toContain('--max-open-plugins bounds a directory of plugin files, and my shop is a dataset');
    expect(bounded.stderr).not.toContain(abs);
    const plugins = shop({ 'a.duckdb': 'not a DuckDB file' });
    const unserved = await cli(['serve', '--data', 'my shop', '--port', '0'], { cwd: plugins.cwd, env });
    expect(unserved.code).toBe(2);
    expect(unserved.stderr).toContain('the directory my shop holds no dataset table and no .duckdb file convx serves:');
    expect(unserved.stderr).toContain("(convx data import DATASET --split-plugins --into 'my shop' writes one file per plugin)");
    expect(unserved.stderr).not.toContain(plugins.abs);
  });

  it('in the errors of importing and appending it', async () => {
    const { cwd, abs } = shop({ 'orders/01.csv': ORDERS + order('p-a'), 'touches.csv': TOUCHES + touch('p-a') });
    expect((await cli(['data', 'import', 'my shop', '--into', 'shop.duckdb'], { cwd })).code).toBe(0);
    // An imported file changed: only a full import takes it, and the hint says how, with the dataset as given.
    writeFileSync(join(abs, 'orders', '01.csv'), ORDERS + order('p-a') + order('p-a', '2024-01-06T10:00:00.000Z'));
    const changed = await stderrOf(['data', 'import', 'my shop', '--into', 'shop.duckdb', '--append'], cwd, abs);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain(': the dataset at my shop changed in a way only a full import can take');
    expect(changed.stderr).toContain("run a full import instead: convx data import 'my shop' --into shop.duckdb --force");
    // --into as given too, and quoted where a hint puts it in a command (unquoted, `mkdir -p no dir` makes two wrong folders)
    const noFolder = await stderrOf(['data', 'import', 'my shop', '--into', 'no dir/x.duckdb'], cwd, abs);
    expect(noFolder.stderr).toBe("convx: error: --into no dir/x.duckdb: the folder no dir does not exist\nhint: create it first (mkdir -p 'no dir'), or choose another --into\n");
    // a folder as --into: a file in it
    for (const [folder, suggested] of [['.', 'dataset.duckdb'], ['my shop/', "'my shop/dataset.duckdb'"]]) {
      const inFolder = await stderrOf(['data', 'import', 'my shop', '--into', folder!], cwd, abs);
      expect(inFolder.stderr).toBe(`convx: error: --into ${folder} is a directory; give a file name such as ${suggested}\n`);
    }
    const missing = await stderrOf(['data', 'import', 'my shop', '--into', 'new one.duckdb', '--append'], cwd, abs);
    expect(missing.stderr).toBe("convx: error: --append: new one.duckdb does not exist\nhint: write it first: convx data import 'my shop' --into 'new one.duckdb'\n");
  });

  it('and so are --output and --into files: a missing folder, a link to nothing, a plugin file that is there', async () => {
    const { cwd, abs } = shop({ 'orders.csv': ORDERS + order('p-a'), 'touches.csv': TOUCHES + touch('p-a') });
    const month = ['report', '--data', 'my shop', '--from', '2024-01-01', '--to', '2024-01-31', '-o', 'html'];
    expect((await stderrOf([...month, '--output', 'no dir/x.html'], cwd, abs)).stderr).toBe('convx: error: --output: cannot write no dir/x.html: its folder does not exist\n');
    symlinkSync(join(cwd, 'nowhere', 'x'), join(cwd, 'link.html'));
    expect((await stderrOf([...month, '--output', 'link.html'], cwd, abs)).stderr).toMatch(/^convx: error: --output link\.html is a symbolic link to a file that does not exist\n/);
    symlinkSync(join(cwd, 'nowhere', 'x'), join(cwd, 'link.duckdb'));
    expect((await stderrOf(['data', 'import', 'my shop', '--into', 'link.duckdb'], cwd, abs)).stderr).toMatch(/^convx: error: --into link\.duckdb is a symbolic link to a file that does not exist\n/);
    mkdirSync(join(cwd, 'plugins', 'p-a.duckdb'), { recursive: true });
    expect((await stderrOf(['data', 'import', 'my shop', '--split-plugins', '--into', 'plugins'], cwd, abs)).stderr).toMatch(/^convx: error: plugins\/p-a\.duckdb: not a file/);
  });

  it('data check of a folder of plugin files says which file to check, as a report says which to read', async () => {
    const { cwd, abs } = shop({ 'orders.csv': ORDERS + order('p-a'), 'touches.csv': TOUCHES + touch('p-a') });
    expect((await cli(['data', 'import', 'my shop', '--split-plugins', '--into', 'plugins'], { cwd })).code).toBe(0);
    const checked = await stderrOf(['data', 'check', 'plugins'], cwd, abs);
    expect([checked.code, checked.stdout]).toEqual([2, '']);
    expect(checked.stderr).toBe('convx: error: plugins holds no dataset tables\n  it holds .duckdb files (data import --split-plugins writes one per plugin): check one of them, e.g. convx data check plugins/p-a.duckdb\n');
  });

  it('a folder without any of the tables is not imported: a slip of the folder writes no file that answers nothing', async () => {
    const { cwd, abs } = shop({ 'notes.txt': 'not a table\n' });
    const empty = await stderrOf(['data', 'import', 'my shop', '--into', 'shop.duckdb'], cwd, abs);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("convx: error: the dataset at my shop holds none of convx's tables (orders, touches, sources, fx, plugins, contacts, assets): nothing to import\n");
    expect(existsSync(join(cwd, 'shop.duckdb'))).toBe(false);
    expect((await stderrOf(['data', 'import', 'my shop', '--split-plugins', '--into', 'plugins/'], cwd, abs)).code).toBe(2);
    // contacts alone (delivery validation's dataset) is imported
    writeFileSync(join(abs, 'contacts.csv'), 'contact_id,email\nc-1,a@x.dev\n');
    expect((await cli(['data', 'import', 'my shop', '--into', 'shop.duckdb'], { cwd })).code).toBe(0);
  });
});
