/**
 * `convx data import DIR --into FILE.duckdb --append` (issue 21, item 1): generated data split by
 * day into per-day files of table folders; the first days imported, then new days appended step
 * by step (several days at once, a new FX date that changes earlier transactions, a late click
 * that changes an earlier order's attribution, a new row of an existing order id, new sources and
 * contacts). After each step every command prints from the updated file what it prints from a
 * full import of the same files (but the data version). The refusals: an imported file changed or
 * removed, a new file sorting before an imported one, a file not written by a full import; an
 * update that fails leaves the old file as it was.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { ident, literal, sql } from '../src/local/sql.js';
import { appendDataset } from '../src/local/import-append.js';
import { datasetFiles, withContentHashes } from '../src/local/import-files.js';
import { importFiles } from '../src/local/import-writer.js';
import { copyEarly } from '../src/local/append/early.js';
import { cli, SAMPLES, suiteThreadsOption, tempDir } from './helpers.js';
import { sameTables } from './import-compare.js';
import { keptCli } from './kept-backends.js';

const root = tempDir('convx-append-');
const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');
const generated = join(root, 'generated');
const PLUGIN = ['--plugin', 'shop-2'];
const OTHER = ['--plugin', 'shop-1'];

/** A CSV file's header and lines (the generator quotes no field before the columns split on here). */
function lines(file: string): { header: string; rows: string[] } {
  const [header, ...rows] = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
  return { header: header!, rows };
}

const column = (header: string, name: string) => header.split(',').indexOf(name);

/** byDay's answers: the generated data never changes once written (beforeAll), and each step reads its tables again. */
const daysOf = new Map<string, { header: string; days: Map<string, string[]> }>();

/** The rows of a generated table by their day (the date or datetime column's first ten characters). */
function byDay(table: string, dateColumn: string): { header: string; days: Map<string, string[]> } {
  const key = `${table} ${dateColumn}`;
  const known = daysOf.get(key);
  if (known) return known;
  const { header, rows } = lines(join(generated, `${table}.csv`));
  const at = column(header, dateColumn);
  const days = new Map<string, string[]>();
  for (const row of rows) {
    const day = row.split(',')[at]!.slice(0, 10);
    const list = days.get(day);
    if (list) list.push(row);
    else days.set(day, [row]);
  }
  daysOf.set(key, { header, days });
  return { header, days };
}

/** Writes table/<day>.csv into dir for each day in [from, to] that has rows (extra rows appended to the last day's file). */
function writeDays(dir: string, table: string, dateColumn: string, from: string, to: string, extra: string[] = []): void {
  const { header, days } = byDay(table, dateColumn);
  mkdirSync(join(dir, table), { recursive: true });
  const chosen = [...days.keys()].filter((day) => day >= from && day <= to).sort();
  for (const [i, day] of chosen.entries()) {
    const rows = [...days.get(day)!, ...(i === chosen.length - 1 ? extra : [])];
    put(join(dir, table, `${day}.csv`), `${header}\n${rows.join('\n')}\n`);
  }
}

/** Writes the first or the second part of a table without dates as table/<part>.csv: the rows whose key is held back come second. */
function writePart(dir: string, table: string, part: 0 | 1, heldBack: (row: string, header: string) => boolean): void {
  const { header, rows } = lines(join(generated, `${table}.csv`));
  mkdirSync(join(dir, table), { recursive: true });
  const chosen = rows.filter((row) => heldBack(row, header) === (part === 1));
  put(join(dir, table, `${part}.csv`), `${header}\n${chosen.join('\n')}\n`);
}

/** Every file of a dataset gets the same whole-second modification time (restored exactly by withFilesHidden). */
const PINNED = 1_700_000_000;
function put(file: string, text: string | Buffer): void {
  writeFileSync(file, text);
  utimesSync(file, PINNED, PINNED);
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const anyVersion = (text: string) => text.replace(/"dataVersion": ?"[\w-]+"/g, '"dataVersion":"<version>"');

/** Every command compared: reports (several periods, --breakdown, --compare previous), trends, totals, items --all, look-ups, drill. */
function commands(orderId: string, contactId: string): string[][] {
  const feb = ['--from', '2024-02-01', '--to', '2024-02-29'];
  const all = ['--from', '2024-01-01', '--to', '2024-02-29'];
  return [
    ['report', ...all, ...PLUGIN, '-o', 'json'],
    ['report', ...feb, ...PLUGIN, '--breakdown', '-o', 'json'],
    ['report', ...feb, ...PLUGIN, '--compare', 'previous', '-o', 'json'],
    ['report', '--from', '2024-01-20', '--to', '2024-02-10', ...PLUGIN],
    ['report', ...all, ...OTHER, '-o', 'csv'],
    ['trend', ...all, ...PLUGIN, '--by', 'day', '-o', 'json'],
    ['trend', ...all, ...OTHER, '--by', 'week', '-o', 'csv'],
    ['total', ...all, ...PLUGIN, '--breakdown', '-o', 'json'],
    ['items', ...all, ...PLUGIN, '--all', '-o', 'csv'],
    ['items', ...all, ...OTHER, '--all', '-o', 'jsonl'],
    ['order', orderId, ...PLUGIN, '-o', 'json'],
    ['contact', contactId, ...PLUGIN, '-o', 'json'],
    ['drill', '/v1/campaigns/k-1/conversions', ...all, ...PLUGIN, '--all', '-o', 'json'],
  ];
}

/**
 * The updated file holds what a full import of the same files writes (every table, sameTables) and
 * answers commands as it does (but the data version): the commands given, each from both files,
 * each file opened once per --plugin for them (kept-backends.ts).
 */
async function sameAsFullImport(dir: string, updated: string, step: string, argvs: string[][], imported?: Promise<string>): Promise<void> {
  const full = await (imported ?? fullImport(dir, step));
  await sameTables(full, updated, step);
  const kept = keptCli();
  try {
    for (const argv of argvs) {
      const [a, b] = await Promise.all([kept([...argv, '--data', full]), kept([...argv, '--data', updated])]);
      const label = `${step}: ${argv.join(' ')}`;
      expect(a.code, `${label}: ${a.stderr}`).toBe(0);
      expect(anyVersion(b.stdout), label).toBe(anyVersion(a.stdout));
      expect(b.stderr.replaceAll(updated, '<data>'), label).toBe(a.stderr.replaceAll(full, '<data>'));
      expect(b.code, label).toBe(a.code);
    }
  } finally {
    await kept.close();
  }
  rmSync(full);
}

/** A full import of the files at dir, for the step named. */
async function fullImport(dir: string, step: string): Promise<string> {
  const full = join(root, `full-${step.replace(/\W+/g, '-')}.duckdb`);
  const run = await cli(['data', 'import', dir, '--into', full]);
  expect(run.code, run.stderr).toBe(0);
  return full;
}

async function append(dir: string, file: string, ...extra: string[]) {
  return cli(['data', 'import', dir, '--into', file, '--append', ...extra]);
}

beforeAll(async () => {
  const run = await cli([
    'data', 'generate', '--out', generated, '--orders', '1000', '--contacts', '300', '--touches', '6000',
    '--plugins', '2', '--from', '2024-01-01', '--to', '2024-02-29',
  ]);
  expect(run.code, run.stderr).toBe(0);
});

/** The dataset of the first days: assets as a file, every other table a folder. */
function firstDays(dir: string, to: string, held: { contacts: (row: string, header: string) => boolean; sources: (row: string, header: string) => boolean }): void {
  mkdirSync(dir, { recursive: true });
  put(join(dir, 'assets.csv'), readFileSync(join(generated, 'assets.csv')));
  writePart(dir, 'plugins', 0, () => false);
  writeDays(dir, 'orders', 'datetime', '0000', to);
  writeDays(dir, 'touches', 'datetime', '0000', to);
  writeDays(dir, 'fx', 'date', '0000', to);
  writePart(dir, 'contacts', 0, held.contacts);
  writePart(dir, 'sources', 0, held.sources);
}

/** Rows of the generated table whose column is one of values. */
function rowsWhere(table: string, name: string, pick: (value: string, row: string) => boolean): string[] {
  const { header, rows } = lines(join(generated, `${table}.csv`));
  const at = column(header, name);
  return rows.filter((row) => pick(row.split(',')[at]!, row));
}

/** The files under dir, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/**
 * work with the files given made unreadable junk of their sizes and modification times (so that
 * `--append` takes them for the files it imported), then restored: an update that reads any of
 * them fails, so one that succeeds read only the new files.
 */
async function withFilesHidden<T>(files: string[], work: () => Promise<T>): Promise<T> {
  const kept = files.map((f) => [f, readFileSync(f)] as const);
  for (const [f, text] of kept) put(f, Buffer.alloc(text.length, 'x'));
  try {
    return await work();
  } finally {
    for (const [f, text] of kept) put(f, text);
  }
}

/** The files an imported file says it was made from (its convx_dataset's files). */
async function storedFiles(file: string): Promise<{ path: string; mtimeNs: string; sha256?: string }[]> {
  const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
  try {
    await db.exec(sql`ATTACH ${literal(file)} AS f (READ_ONLY)`);
    const row = await db.one<{ value: string }>(sql`SELECT value FROM f.main.convx_dataset WHERE key = 'files'`);
    return JSON.parse(row!.value);
  } finally {
    db.close();
  }
}

/** The sources attributed in a scope of an imported file. */
async function attributedSources(file: string, schema: string): Promise<string[]> {
  const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
  try {
    await db.exec(sql`ATTACH ${literal(file)} AS f (READ_ONLY)`);
    const rows = await db.all<{ id: string }>(sql`SELECT source_id AS id FROM f.${ident(schema)}.source_info ORDER BY source_key`);
    return rows.map((r) => r.id);
  } finally {
    db.close();
  }
}

/** An order row of the generated data with a new datetime, id, amounts or refund flag. */
function orderRow(row: string[], change: { id?: string; at?: string; amounts?: [string, string]; refund?: boolean }): string {
  const [plugin, id, contact, at, currency, wo, w, country, refund, status] = row;
  const [nwo, nw] = change.amounts ?? [wo, w];
  return [plugin, change.id ?? id, contact, change.at ?? at, currency, nwo, nw, country, change.refund === undefined ? refund : String(change.refund), status].join(',');
}

/** A click of the order's contact, ms before the order (or at the time given), through a campaign. */
const clickBefore = (row: string[], ms: number, campaign: string, touch = 'click') =>
  `${row[0]},${row[2]},${new Date(Date.parse(row[3]!) - ms).toISOString()},${touch},campaign,${campaign}`;

describe('data import --append', () => {
  it('after each step of new days, holds what a full import of the same files holds, and answers commands as it does', async () => {
    const dir = join(root, 'steps');
    // Contacts c-29x and the source k-3 of shop-2 come in a second file, late.
    const held = {
      contacts: (row: string, header: string) => /^c-29\d$/.test(row.split(',')[column(header, 'contact_id')]!),
      sources: (row: string) => row.startsWith('shop-2,campaign,k-3,'),
    };
    firstDays(dir, '2024-01-31', held);
    const file = join(root, 'steps.duckdb');
    expect((await cli(['data', 'import', dir, '--into', file])).code).toBe(0);
    const shop2 = (day: string) => rowsWhere('orders', 'datetime', (v, row) => v.startsWith(day) && row.startsWith('shop-2,') && row.endsWith(',false,completed'))[0]!.split(',');
    const january = shop2('2024-01-1');
    const all = commands(january[1]!, january[2]!);
    // Each step compares every table, and a quarter of the commands in turn; the step of late rows, every command.
    const some = (step: number) => all.filter((_, i) => i % 4 === step % 4);
    /** Appends the files written since old was listed, reading none of the old ones, and compares with a full import. */
    const step = async (n: number, name: string, old: string[], argvs = some(n)) => {
      // The full import reads a copy of the files, made before the old ones are hidden: the two run at once.
      const copy = join(root, `files-${n}`);
      cpSync(dir, copy, { recursive: true, preserveTimestamps: true });
      const full = fullImport(copy, name);
      const run = await withFilesHidden(old, () => append(dir, file));
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/appended \d+ files to .* MB\) in [\d.]+ s: orders /);
      await sameAsFullImport(dir, file, name, argvs, full);
    };

    // One new day; then several, with a click of a new source k-9 just before an order (which it takes) and an order row of
    // a negative amount, the last five days' orders without their rates (which come with the next step's rows).
    const taken = shop2('2024-02-07');
    let old = filesUnder(dir);
    for (const [table, at] of [['orders', 'datetime'], ['touches', 'datetime'], ['fx', 'date']] as const) writeDays(dir, table, at, '2024-02-01', '2024-02-01');
    await step(1, 'one day', old);
    old = filesUnder(dir);
    writeDays(dir, 'orders', 'datetime', '2024-02-02', '2024-02-14', [orderRow(taken, { id: 'o-negative-1', at: '2024-02-14T12:00:00.000Z', amounts: ['-5.0', '-6.05'] })]);
    writeDays(dir, 'touches', 'datetime', '2024-02-02', '2024-02-14', [clickBefore(taken, 1000, 'k-9')]);
    writeDays(dir, 'fx', 'date', '2024-02-02', '2024-02-09');
    await step(2, 'several days, five without their rates', old);
    expect(await attributedSources(file, 'scope_1')).toContain('k-9');

    // Late rows: the rates of the five days before, which change their transactions; a click (dated before an earlier order of its contact) through k-3, whose sources row comes now; a later click
    // that takes k-9's only order from it; a click of a new source k-0, which sorts before the others; a refund and a second
    // row of existing order ids; another negative amount; new contacts and sources.
    const early = shop2('2024-02-05');
    const other = shop2('2024-02-08');
    old = filesUnder(dir);
    writeDays(dir, 'fx', 'date', '2024-02-10', '2024-02-14');
    const clicks = [`shop-2,${early[2]},2024-02-04T08:00:00.000Z,click,campaign,k-3`, clickBefore(taken, 500, 'k-1'), clickBefore(other, 1000, 'k-0')];
    writeDays(dir, 'touches', 'datetime', '2024-02-15', '2024-02-16', clicks);
    const refund = orderRow(early, { at: '2024-02-16T09:00:00.000Z', refund: true });
    const again = orderRow(early, { at: '2024-02-16T10:00:00.000Z' });
    const negative = orderRow(other, { id: 'o-negative-2', at: '2024-02-16T11:00:00.000Z', amounts: ['-1.0', '-1.21'] });
    writeDays(dir, 'orders', 'datetime', '2024-02-15', '2024-02-16', [refund, again, negative]);
    writePart(dir, 'contacts', 1, held.contacts);
    writePart(dir, 'sources', 1, held.sources);
    await step(3, 'late rows', old, commands(early[1]!, early[2]!));
    const sources = await attributedSources(file, 'scope_1');
    expect(sources).not.toContain('k-9');
    expect(sources.indexOf('k-0')).toBeLessThan(sources.indexOf('k-1'));

    // The rest of the days, with an earlier touch of k-0 (which has no sources row: it started at its first touch).
    old = filesUnder(dir);
    for (const [table, at] of [['orders', 'datetime'], ['fx', 'date']] as const) writeDays(dir, table, at, '2024-02-17', '9999');
    writeDays(dir, 'touches', 'datetime', '2024-02-17', '9999', [`shop-2,${other[2]},2024-01-02T00:00:00.000Z,open,campaign,k-0`]);
    await step(4, 'the rest', old);

    const before = sha(file);
    const none = await append(dir, file);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toMatch(/has no new files; nothing to append/);
    expect(sha(file)).toBe(before);
  });
});

describe('data import --append: refusals', () => {
  const base = join(root, 'base');
  let baseFile = '';

  beforeAll(async () => {
    firstDays(base, '2024-01-20', { contacts: () => false, sources: () => false });
    baseFile = join(root, 'base.duckdb');
    const run = await cli(['data', 'import', base, '--into', baseFile]);
    expect(run.code, run.stderr).toBe(0);
  });

  /** A copy of the base dataset (its files' times kept) and of its import. */
  function importedCopy(name: string): string {
    cpSync(base, join(root, name), { recursive: true, preserveTimestamps: true });
    const file = join(root, `${name}.duckdb`);
    copyFileSync(baseFile, file);
    return file;
  }

  /** A copy of the base dataset and its import, changed by change; the refusal's stderr, with the file left as it was and nothing staged beside it. */
  async function refused(name: string, change: (dir: string) => void): Promise<string> {
    const dir = join(root, name);
    const file = importedCopy(name);
    const before = sha(file);
    change(dir);
    const run = await append(dir, file);
    expect(run.code, run.stderr).toBe(2);
    expect(sha(file)).toBe(before);
    expect(readdirSync(root).filter((f) => f.startsWith(`${name}.duckdb.tmp-`))).toEqual([]);
    const report = await cli(['report', '--from', '2024-01-01', '--to', '2024-01-31', ...PLUGIN, '--data', file]);
    expect(report.code, report.stderr).toBe(0);
    return run.stderr;
  }

  it('refuses an imported file that changed, with the full import to run', async () => {
    const stderr = await refused('changed', (dir) => appendFileSync(join(dir, 'orders', '2024-01-05.csv'), 'shop-1,o-new,c-1,2024-01-05T10:00:00.000Z,EUR,1,1.21,CZ,false,completed\n'));
    expect(stderr).toMatch(/cannot append to .*changed\.duckdb: the dataset at .* changed in a way only a full import can take/);
    expect(stderr).toMatch(/^ {2}orders\/2024-01-05\.csv changed since it was imported$/m);
    expect(stderr.match(/changed since/g)).toHaveLength(1);
    expect(stderr).toMatch(/run a full import instead: convx data import .* --into .*changed\.duckdb --force/);
  });

  it('takes an imported file copied or exported again (another modification time, the same bytes) as the file imported', async () => {
    const dir = join(root, 'touched');
    const file = importedCopy('touched');
    // The import stored the SHA-256 of every file it read.
    const imported = await storedFiles(file);
    expect(imported.length).toBeGreaterThan(20);
    for (const f of imported) expect(f.sha256, f.path).toBe(sha(join(dir, f.path)));
    // Two files touched and nothing new: nothing to append, said so, the file as it was.
    const before = sha(file);
    for (const name of ['orders/2024-01-05.csv', 'touches/2024-01-03.csv']) utimesSync(join(dir, name), PINNED + 3600, PINNED + 3600);
    const idle = await append(dir, file);
    expect(idle.code, idle.stderr).toBe(0);
    expect(idle.stderr).toMatch(/has no new files; nothing to append; 2 imported files with a new modification time and the same bytes taken as imported\n$/);
    expect(sha(file)).toBe(before);
    // A new day beside them: appended the short way (the touched files not read again), as a full import of the same files.
    for (const [table, at] of [['orders', 'datetime'], ['touches', 'datetime'], ['fx', 'date']] as const) writeDays(dir, table, at, '2024-01-21', '2024-01-21');
    const touchedFiles = [join(dir, 'orders', '2024-01-05.csv'), join(dir, 'touches', '2024-01-03.csv')];
    const run = await withFilesHidden(filesUnder(dir).filter((f) => !/2024-01-21/.test(f) && !touchedFiles.includes(f)), () => append(dir, file));
    expect(run.code, run.stderr).toBe(0);
    const day = filesUnder(dir).filter((f) => /2024-01-21/.test(f));
    expect(day.length).toBeGreaterThan(0);
    expect(run.stderr).toMatch(new RegExp(`appended ${day.length} files? to .*: orders [^;]*; 2 imported files with a new modification time and the same bytes taken as imported\\n$`));
    expect(run.stderr).not.toMatch(/every file read/);
    await sameAsFullImport(dir, file, 'touched', [['report', '--from', '2024-01-01', '--to', '2024-01-31', ...PLUGIN, '-o', 'json']]);
    // The update stored the files' new times and the hashes of the new ones: the next update says nothing of them.
    const updated = await storedFiles(file);
    expect(updated).toHaveLength(imported.length + day.length);
    for (const f of updated) {
      expect(f.sha256, f.path).toBe(sha(join(dir, f.path)));
      expect(f.mtimeNs, f.path).toBe(String(statSync(join(dir, f.path), { bigint: true }).mtimeNs));
    }
    const next = await append(dir, file);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/nothing to append\n$/);
  });

  it('a file written while an import or an update reads it keeps no hash: the same bytes again under a new time are refused', async () => {
    // The exporter rewrites the file while it is read (other bytes, then the same again): here after its hash, and again once read.
    const cut = (bytes: Buffer) => bytes.subarray(0, bytes.lastIndexOf(10, bytes.length >> 1) + 1);
    // Other bytes of the same size (the header's first letter in upper case: the same columns).
    const other = (bytes: Buffer) => Buffer.concat([Buffer.from(bytes.subarray(0, 1).toString().toUpperCase()), bytes.subarray(1)]);
    const whole = (path: string, bytes: Buffer) => {
      writeFileSync(path, bytes);
      utimesSync(path, PINNED + 7200, PINNED + 7200);
    };
    const hashOf = async (file: string, path: string) => (await storedFiles(file)).find((f) => f.path === path)!.sha256;
    // A full import.
    const dir = join(root, 'rewritten');
    const file = importedCopy('rewritten');
    const path = join(dir, 'orders', '2024-01-05.csv');
    const bytes = readFileSync(path);
    const listed = await withContentHashes(dir, await datasetFiles(dir));
    writeFileSync(path, other(bytes));
    utimesSync(path, PINNED + 3600, PINNED + 3600);
    await importFiles(dir, file, listed, suiteThreadsOption());
    whole(path, bytes);
    expect(await hashOf(file, 'orders/2024-01-05.csv')).toBeUndefined();
    expect(await hashOf(file, 'orders/2024-01-06.csv')).toBe(sha(join(dir, 'orders', '2024-01-06.csv')));
    const refused = await append(dir, file);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/orders\/2024-01-05\.csv changed since it was imported \(the same size, another modification time\)/);
    // An update: a new file cut once hashed (the phase of the update's read), whole again after.
    const dir2 = join(root, 'rewritten-new');
    const file2 = importedCopy('rewritten-new');
    writeDays(dir2, 'orders', 'datetime', '2024-01-21', '2024-01-21');
    const added = join(dir2, 'orders', '2024-01-21.csv');
    const addedBytes = readFileSync(added);
    const onPhase = (phase: string) => phase === 'reading and checking the files' && writeFileSync(added, cut(addedBytes));
    expect((await appendDataset(dir2, file2, { ...suiteThreadsOption(), onPhase })).way).toBe('short');
    whole(added, addedBytes);
    expect(await hashOf(file2, 'orders/2024-01-21.csv')).toBeUndefined();
    const next = await append(dir2, file2);
    expect(next.code).toBe(2);
    expect(next.stderr).toMatch(/orders\/2024-01-21\.csv changed since it was imported \(the same size, another modification time\)/);
    // A file gone before its hash is read: as DuckDB's read of it would fail, a data error.
    await expect(withContentHashes(dir, [{ table: 'orders', path: 'orders/gone.csv', size: 1, mtimeNs: '1' }])).rejects.toThrow(/^cannot read orders\/gone\.csv of .*rewritten: it is gone$/);
  });

  it('refuses a touched file where the import stored no hashes (an older convx), as it did', async () => {
    const dir = join(root, 'touched-old');
    const file = importedCopy('touched-old');
    // The file as an older import wrote it: its files without sha256.
    const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
    try {
      await db.exec(sql`ATTACH ${literal(file)} AS f`);
      const files = (await storedFiles(file)).map(({ sha256: _, ...f }) => f);
      await db.exec(sql`UPDATE f.main.convx_dataset SET value = ${JSON.stringify(files)} WHERE key = 'files'`);
    } finally {
      db.close();
    }
    expect((await storedFiles(file)).every((f) => f.sha256 === undefined)).toBe(true);
    const before = sha(file);
    utimesSync(join(dir, 'orders', '2024-01-05.csv'), PINNED + 3600, PINNED + 3600);
    const run = await append(dir, file);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/orders\/2024-01-05\.csv changed since it was imported \(the same size, another modification time\)/);
    expect(sha(file)).toBe(before);
  });

  it('refuses an imported file that is gone', async () => {
    const stderr = await refused('removed', (dir) => rmSync(join(dir, 'touches', '2024-01-03.csv')));
    expect(stderr).toMatch(/touches\/2024-01-03\.csv was imported and is gone/);
    expect(stderr).not.toMatch(/changed since/);
  });

  it('refuses another dataset, naming the one the file was imported from, and lists at most ten problems', async () => {
    const other = importedCopy('other');
    const before = sha(other);
    const run = await append(SAMPLES, other);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot append to .*other\.duckdb: .*shop holds (none|\d+) of the \d+ files it was imported from \(.*base\)/);
    // The first files gone are named, nine at most.
    expect(run.stderr.split('\n').filter((line) => /was imported and is gone/.test(line)).length).toBeGreaterThan(0);
    expect(run.stderr.split('\n').filter((line) => /was imported and is gone/.test(line)).length).toBeLessThanOrEqual(9);
    expect(sha(other)).toBe(before);
    // Every orders file changed in place: the same size, other bytes (its header's first letter upper case), another time.
    const stderr = await refused('many-touched', (dir) => {
      for (const name of readdirSync(join(dir, 'orders'))) {
        const path = join(dir, 'orders', name);
        const text = readFileSync(path, 'utf8');
        writeFileSync(path, text[0]!.toUpperCase() + text.slice(1));
      }
    });
    const touched = stderr.split('\n').filter((line) => /changed since it was imported \(the same size, other bytes\)/.test(line));
    expect(touched).toHaveLength(9);
    expect(stderr).toMatch(/^ {2}and \d+ more$/m);
  });

  it('refuses a new .tsv file in a folder of .csv files, as a full import and every command refuse the folder', async () => {
    const stderr = await refused('tsv', (dir) => {
      const { header, rows } = lines(join(dir, 'orders', '2024-01-20.csv'));
      put(join(dir, 'orders', '2024-01-21.tsv'), `${header.replaceAll(',', '\t')}\n${rows.map((r) => r.replaceAll(',', '\t')).join('\n')}\n`);
    });
    const said = 'orders/: the folder mixes comma-separated (.csv) and tab-separated (.tsv) files; use one';
    expect(stderr).toContain(said);
    const full = await cli(['data', 'import', join(root, 'tsv'), '--into', join(root, 'tsv-full.duckdb')]);
    expect(full.code).toBe(2);
    expect(full.stderr).toContain(said);
  });

  it('refuses a new file read before an imported one', async () => {
    const stderr = await refused('earlier', (dir) => {
      writeDays(dir, 'orders', 'datetime', '2024-01-21', '2024-01-22');
      copyFileSync(join(dir, 'orders', '2024-01-21.csv'), join(dir, 'orders', '2024-01-00.csv'));
    });
    expect(stderr).toMatch(/orders\/2024-01-00\.csv is new and is read before orders\/2024-01-20\.csv, which was imported/);
    expect(stderr).not.toMatch(/changed since|is gone|2024-01-2[12]/);
  });

  it('takes the order the files are read in, not their names: each suffix\'s files in turn', async () => {
    // orders/a.csv.gz and orders/c.csv imported: the .csv.gz files are read first (a's suffix comes first),
    // so a new orders/d.csv.gz, after c.csv by name, is read before it: its rows would come before c's in a full import
    const dir = tempDir('convx-append-order-');
    cpSync(SAMPLES, dir, { recursive: true });
    mkdirSync(join(dir, 'orders'));
    const [header, ...rows] = readFileSync(join(dir, 'orders.csv'), 'utf8').trimEnd().split('\n');
    rmSync(join(dir, 'orders.csv'));
    const part = (from: number, to: number) => `${header}\n${rows.slice(from, to).join('\n')}\n`;
    writeFileSync(join(dir, 'orders', 'a.csv.gz'), gzipSync(part(0, 100)));
    writeFileSync(join(dir, 'orders', 'c.csv'), part(100, rows.length - 5));
    const file = join(dir, 'shop.duckdb');
    expect((await cli(['data', 'import', dir, '--into', file, '--quiet'])).code).toBe(0);
    writeFileSync(join(dir, 'orders', 'd.csv.gz'), gzipSync(part(rows.length - 5, rows.length)));
    const update = await cli(['data', 'import', dir, '--into', file, '--append']);
    expect(update.code).toBe(2);
    expect(update.stderr).toMatch(/orders\/d\.csv\.gz is new and is read before orders\/c\.csv, which was imported/);
    // a new .csv file is read after c.csv: taken, with a full import's result
    rmSync(join(dir, 'orders', 'd.csv.gz'));
    writeFileSync(join(dir, 'orders', 'e.csv'), part(rows.length - 5, rows.length));
    expect((await cli(['data', 'import', dir, '--into', file, '--append', '--quiet'])).code).toBe(0);
    const full = join(dir, 'full.duckdb');
    expect((await cli(['data', 'import', dir, '--into', full, '--quiet'])).code).toBe(0);
    await sameTables(full, file, 'a new .csv after c.csv');
  });

  it('a data error in a new file fails the update and leaves the old file as it was, usable', async () => {
    const stderr = await refused('broken', (dir) => {
      writeDays(dir, 'orders', 'datetime', '2024-01-21', '2024-01-21');
      const { header, rows } = lines(join(dir, 'orders', '2024-01-21.csv'));
      writeFileSync(join(dir, 'orders', '2024-01-22.csv'), `${header}\n${rows[0]!.replace(/,2024-01-21T[^,]+,/, ',yesterday,')}\n`);
    });
    expect(stderr).toMatch(/orders\/2024-01-22\.csv/);
    expect(stderr).toMatch(/yesterday/);
  });

  it('a running convx serve answers from the old file until it is reloaded, then from the new one', async () => {
    const { startServer } = await import('../src/server/start.js');
    const { signDevelopmentToken } = await import('../src/server/auth.js');
    const dir = join(root, 'served');
    const file = importedCopy('served');
    const secret = 'append-test-secret-long-enough';
    const server = await startServer({ dir: file, host: '127.0.0.1', port: 0, auth: { secret }, log: () => undefined, version: 'test' });
    try {
      const token = await signDevelopmentToken(secret, 'shop-2', '1h');
      const get = async () => {
        const res = await fetch(`${server.url}/v1/conversions?dateFrom=2024-01-01&dateTo=2024-02-29`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
        return { version: res.headers.get('convx-data-version'), text: await res.text() };
      };
      const before = await get();
      for (const [table, at] of [['orders', 'datetime'], ['touches', 'datetime'], ['fx', 'date']] as const) writeDays(dir, table, at, '2024-01-21', '2024-01-23');
      const run = await append(dir, file);
      expect(run.code, run.stderr).toBe(0);
      expect(await get()).toEqual(before);
      await server.reload();
      const after = await get();
      expect(after.version).not.toBe(before.version);
      expect(after.text).not.toBe(before.text);
      const local = await cli(['report', '--from', '2024-01-01', '--to', '2024-02-29', ...PLUGIN, '-o', 'json', '--data', file]);
      expect(JSON.parse(after.text).data).toEqual(JSON.parse(local.stdout).data);
    } finally {
      await server.close();
    }
  });

  /**
   * A copy of the base and its import given new days, updated by the built binary, which gets signal
   * once its staging file is there (or had ended first): the file, its hash before, whether the
   * staging file was caught, the exit status, and whether one is there now.
   */
  async function stoppedWhileStaged(name: string, signal: NodeJS.Signals) {
    const file = importedCopy(name);
    const dir = join(root, name);
    const before = sha(file);
    for (const [table, at] of [['orders', 'datetime'], ['touches', 'datetime'], ['fx', 'date']] as const) writeDays(dir, table, at, '2024-01-21', '2024-02-29');
    const child = spawn(process.execPath, [BIN, 'data', 'import', dir, '--into', file, '--append'], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    const staged = () => readdirSync(root).some((f) => f.startsWith(`${name}.duckdb.tmp-`));
    let done = false;
    void exited.then(() => (done = true));
    while (!done && !staged()) await new Promise((resolve) => setTimeout(resolve, 2));
    const caught = staged();
    child.kill(signal);
    return { file, dir, before, caught, status: await exited, staged };
  }

  it('an update killed while it writes leaves the old file as it was; the next one completes and removes the staging file', async () => {
    const { file, dir, before, staged } = await stoppedWhileStaged('killed', 'SIGKILL');
    // Killed while it wrote (the usual case), the old file is untouched; had it finished first, the file is the update.
    if (staged()) expect(sha(file)).toBe(before);
    expect((await cli(['report', '--from', '2024-01-01', '--to', '2024-01-31', ...PLUGIN, '--data', file])).code).toBe(0);
    const again = await append(dir, file);
    expect(again.code, again.stderr).toBe(0);
    expect(readdirSync(root).filter((f) => f.startsWith('killed.duckdb.tmp-'))).toEqual([]);
    await sameAsFullImport(dir, file, 'after a killed update', commands('o-2', 'c-1').slice(0, 1));
  });

  it('an update stopped by Ctrl-C or SIGTERM while it writes exits 130 or 143, leaving the old file as it was and no staging file', async () => {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const name = `stopped-${signal}`;
      const { file, before, caught, status } = await stoppedWhileStaged(name, signal);
      // Stopped while it wrote (the usual case): the old file is untouched; had it finished first, it is the update.
      if (caught && status !== 0) {
        expect(status, signal).toBe(code);
        expect(sha(file), signal).toBe(before);
      }
      expect(readdirSync(root).filter((f) => f.startsWith(`${name}.duckdb.`)), signal).toEqual([]);
    }
  });

  it('rows of a new plugin take the long way, every file read and attributed again, with the same result', async () => {
    const dir = join(root, 'plugin');
    const file = importedCopy('plugin');
    put(join(dir, 'plugins', '1.csv'), `${lines(join(generated, 'plugins.csv')).header}\nshop-3,CZK,Shop 3\n`);
    put(join(dir, 'orders', 'zz-shop-3.csv'), `${lines(join(dir, 'orders', '2024-01-20.csv')).header}\nshop-3,o-s3-1,c-1,2024-01-20T10:00:00.000Z,CZK,100.0,121.0,CZ,false,completed\n`);
    // An imported file touched (the same bytes): taken as imported the long way too, its new time stored.
    const touched = join(dir, 'orders', '2024-01-05.csv');
    utimesSync(touched, PINNED + 3600, PINNED + 3600);
    const summary = await appendDataset(dir, file, suiteThreadsOption());
    expect(summary.way).toBe('full');
    expect(summary.why).toBe('a new plugin');
    expect(summary.touched.map((f) => f.path)).toEqual(['orders/2024-01-05.csv']);
    const stored = (await storedFiles(file)).find((f) => f.path === 'orders/2024-01-05.csv')!;
    expect(stored).toMatchObject({ mtimeNs: String(statSync(touched, { bigint: true }).mtimeNs), sha256: sha(touched) });
    await sameAsFullImport(dir, file, 'a new plugin', []);
    // The command's summary says so, and why.
    const again = importedCopy('plugin-cli');
    const run = await append(dir, again);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/appended 2 files to .*; every file read and attributed again \(a new plugin\); 1 imported file with a new modification time and the same bytes taken as imported\n$/);
  });

  it("negative amounts of a new file read after a stored file's but named before it (as a full import names them) take the long way; named after it, the short way, stored ones first", async () => {
    // orders/0000.csv.gz and z-stored.csv.gz (its negative amount) are read before the .csv files (0000's suffix comes first), but a full
    // import names the rows of a file in their paths' order: a new m-added.csv, read last, is named before z-stored.csv.gz
    const [header, first] = [lines(join(base, 'orders', readdirSync(join(base, 'orders')).sort()[0]!)).header, lines(join(generated, 'orders.csv')).rows[0]!.split(',')];
    const file = (id: string, amounts?: [string, string]) => `${header}\n${orderRow(first, { id, ...(amounts ? { amounts } : {}) })}\n`;
    // The two cases' datasets before the new file, imported once (a copy of both for each, as importedCopy's).
    const stored = join(root, 'negative');
    cpSync(base, stored, { recursive: true, preserveTimestamps: true });
    put(join(stored, 'orders', '0000.csv.gz'), gzipSync(file('o-zero')));
    put(join(stored, 'orders', 'z-stored.csv.gz'), gzipSync(file('o-stored', ['-2.0', '-2.42'])));
    expect((await cli(['data', 'import', stored, '--into', `${stored}.duckdb`])).code).toBe(0);
    for (const [name, added, way] of [['negative-before', 'm-added.csv', 'full'], ['negative-after', 'zz-added.csv', 'short']] as const) {
      const dir = join(root, name);
      cpSync(stored, dir, { recursive: true, preserveTimestamps: true });
      const imported = join(root, `${name}.duckdb`);
      copyFileSync(`${stored}.duckdb`, imported);
      put(join(dir, 'orders', added), file(`o-added-${name}`, ['-1.0', '-1.21']));
      const summary = await appendDataset(dir, imported, suiteThreadsOption());
      expect(summary.way, name).toBe(way);
      const examples = summary.findings.find((f) => f.code === 'negative_amount')!.examples;
      expect(examples.map((e) => /o-(stored|added)/.exec(e)![1]), name).toEqual(way === 'full' ? ['added', 'stored'] : ['stored', 'added']);
      await sameAsFullImport(dir, imported, name, []);
    }
  });

  describe('the copy started as the command starts (append/early.ts)', () => {
    const NOW = Date.now() / 1000;
    /** A copy of the base dataset and its import, where the files written next are newer than the import. */
    function newerCopy(name: string): { dir: string; file: string } {
      const file = importedCopy(name);
      utimesSync(file, PINNED + 10, PINNED + 10);
      return { dir: join(root, name), file };
    }
    const staged = (file: string) => readdirSync(root).filter((f) => f.startsWith(`${file.split('/').pop()}.tmp-`));

    it('starts only where the dataset holds a file newer than the imported one, copying the file a link names', async () => {
      const { dir, file } = newerCopy('early-when');
      // Every file as old as the import or older: no copy.
      expect(copyEarly(dir, file)).toBeUndefined();
      writeDays(dir, 'orders', 'datetime', '2024-01-21', '2024-01-21');
      expect(copyEarly(dir, file)).toBeUndefined();
      utimesSync(join(dir, 'orders', '2024-01-21.csv'), NOW, NOW);
      const early = copyEarly(dir, file)!;
      expect(early.copy).toMatchObject({ target: file });
      expect(early.copy.staging).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.tmp-${process.pid}-[0-9a-f]{8}$`));
      await early.copy.ready;
      expect(sha(early.copy.staging)).toBe(sha(file));
      await early.staging.remove();
      expect(staged(file)).toEqual([]);
      // Through a symbolic link: the file it names, as the update writes it.
      const link = join(root, 'early-when-link.duckdb');
      symlinkSync(file, link);
      const linked = copyEarly(dir, link)!;
      expect(linked.copy.target).toBe(file);
      await linked.staging.remove();
      // A link to a folder beside the tables is no table (discovery does not follow it); one inside a table's folder
      // is refused by discovery, so no copy: the update says why.
      symlinkSync('..', join(dir, 'parent'));
      const beside = copyEarly(dir, file)!;
      expect(beside).toBeDefined();
      await beside.staging.remove();
      symlinkSync('..', join(dir, 'orders', 'up'));
      expect(copyEarly(dir, file)).toBeUndefined();
      rmSync(join(dir, 'orders', 'up'));
      // Only the tables' data files count: a newer note, or an editor's file in a table's folder, starts nothing.
      utimesSync(join(dir, 'orders', '2024-01-21.csv'), PINNED, PINNED);
      writeFileSync(join(dir, 'notes.txt'), 'not a table\n');
      writeFileSync(join(dir, 'orders', '.2024-01-21.csv.swp'), 'an editor\n');
      expect(copyEarly(dir, file)).toBeUndefined();
      // Nothing to copy, or nowhere: no copy, and the update says what.
      expect(copyEarly(dir, join(root, 'early-none.duckdb'))).toBeUndefined();
      expect(copyEarly(join(root, 'early-no-dir'), file)).toBeUndefined();
      symlinkSync(join(root, 'early-nothing.duckdb'), join(root, 'early-dangling.duckdb'));
      expect(copyEarly(dir, join(root, 'early-dangling.duckdb'))).toBeUndefined();
      expect(staged(file)).toEqual([]);
    });

    it('the short way takes the copy over and renames it into place: the same result as a full import', async () => {
      const { dir, file } = newerCopy('early-short');
      writeDays(dir, 'orders', 'datetime', '2024-01-21', '2024-01-23');
      writeDays(dir, 'touches', 'datetime', '2024-01-21', '2024-01-23');
      utimesSync(join(dir, 'orders', '2024-01-23.csv'), NOW, NOW);
      const early = copyEarly(dir, file)!;
      expect(early).toBeDefined();
      await early.copy.ready;
      const copied = statSync(early.copy.staging).ino;
      const summary = await appendDataset(dir, file, suiteThreadsOption(), early);
      expect(summary.way).toBe('short');
      expect(staged(file)).toEqual([]);
      // The early copy, renamed into place (not a second copy made).
      expect(statSync(file).ino).toBe(copied);
      await sameAsFullImport(dir, file, 'early copy, short way', [['report', '--from', '2024-01-01', '--to', '2024-01-31', ...PLUGIN, '-o', 'json']]);
    });

    it('is a copy of the file the update reads: one replaced since the copy started is copied again, one replaced while the update runs is refused', async () => {
      const { dir, file } = newerCopy('early-replaced');
      writeDays(dir, 'orders', 'datetime', '2024-01-21', '2024-01-21');
      // Another update of the same file, run to its end after this one's copy started: its file replaces the one copied.
      const other = join(root, 'early-replaced-other.duckdb');
      copyFileSync(file, other);
      expect((await appendDataset(dir, other, suiteThreadsOption())).way).toBe('short');
      writeDays(dir, 'orders', 'datetime', '2024-01-22', '2024-01-23');
      utimesSync(join(dir, 'orders', '2024-01-23.csv'), NOW, NOW);
      const early = copyEarly(dir, file)!;
      expect(early).toBeDefined();
      await early.copy.ready;
      renameSync(other, file);
      // Taken, the copy of the first file would lack 2024-01-21's orders while its list named them.
      const summary = await appendDataset(dir, file, suiteThreadsOption(), early);
      expect(summary.added.map((f) => f.path)).toEqual(['orders/2024-01-22.csv', 'orders/2024-01-23.csv']);
      expect(staged(file)).toEqual([]);
      await sameAsFullImport(dir, file, 'early copy of a replaced file', []);
      // A file replaced while the update writes its copy: refused, nothing written, the other's file kept.
      writeDays(dir, 'orders', 'datetime', '2024-01-24', '2024-01-24');
      const meanwhile = join(root, 'early-replaced-meanwhile.duckdb');
      copyFileSync(file, meanwhile);
      const kept = sha(meanwhile);
      const replace = (phase: string) => {
        if (phase === 'attributing') renameSync(meanwhile, file);
      };
      await expect(appendDataset(dir, file, { ...suiteThreadsOption(), onPhase: replace })).rejects.toThrow(/was replaced while this update ran/);
      expect(sha(file)).toBe(kept);
      expect(staged(file)).toEqual([]);
      // Replaced after its list of files was read, before the copy (made then, without an early one): refused as well.
      copyFileSync(file, meanwhile);
      const early2 = (phase: string) => {
        if (phase === 'reading and checking the files') renameSync(meanwhile, file);
      };
      const before = sha(file);
      await expect(appendDataset(dir, file, { ...suiteThreadsOption(), onPhase: early2 })).rejects.toThrow(/was replaced while this update ran/);
      expect(sha(file)).toBe(before);
      expect(staged(file)).toEqual([]);
      // The long way (a new plugin) starts from a copy of the file too, made as it writes: replaced before, refused.
      put(join(dir, 'plugins', '1.csv'), `${lines(join(generated, 'plugins.csv')).header}\nshop-3,CZK,Shop 3\n`);
      put(join(dir, 'orders', 'zz-shop-3.csv'), `${lines(join(dir, 'orders', '2024-01-20.csv')).header}\nshop-3,o-s3-1,c-1,2024-01-20T10:00:00.000Z,CZK,100.0,121.0,CZ,false,completed\n`);
      copyFileSync(file, meanwhile);
      const writing = (phase: string) => {
        if (phase === 'writing' && existsSync(meanwhile)) renameSync(meanwhile, file);
      };
      const kept2 = sha(meanwhile);
      await expect(appendDataset(dir, file, { ...suiteThreadsOption(), onPhase: writing })).rejects.toThrow(/was replaced while this update ran/);
      expect(sha(file)).toBe(kept2);
      expect(staged(file)).toEqual([]);
    });

    it('is removed before the long way writes its own, when there is nothing to add, and on a refusal', async () => {
      // The long way (a new plugin): every file read again, into a staging file of the same name.
      const plugin = newerCopy('early-long');
      put(join(plugin.dir, 'plugins', '1.csv'), `${lines(join(generated, 'plugins.csv')).header}\nshop-3,CZK,Shop 3\n`);
      put(join(plugin.dir, 'orders', 'zz-shop-3.csv'), `${lines(join(plugin.dir, 'orders', '2024-01-20.csv')).header}\nshop-3,o-s3-1,c-1,2024-01-20T10:00:00.000Z,CZK,100.0,121.0,CZ,false,completed\n`);
      utimesSync(join(plugin.dir, 'orders', 'zz-shop-3.csv'), NOW, NOW);
      const long = await appendDataset(plugin.dir, plugin.file, suiteThreadsOption(), copyEarly(plugin.dir, plugin.file));
      expect(long).toMatchObject({ way: 'full', why: 'a new plugin' });
      expect(staged(plugin.file)).toEqual([]);
      await sameAsFullImport(plugin.dir, plugin.file, 'early copy, long way', []);
      // Data files newer than the file (its time set back), none new: nothing to add, the file as it was.
      const none = newerCopy('early-nothing-new');
      utimesSync(none.file, PINNED - 10, PINNED - 10);
      const before = sha(none.file);
      const idle = copyEarly(none.dir, none.file);
      expect(idle).toBeDefined();
      const nothing = await appendDataset(none.dir, none.file, suiteThreadsOption(), idle);
      expect(nothing.way).toBe('none');
      expect(sha(none.file)).toBe(before);
      expect(staged(none.file)).toEqual([]);
      // An imported file changed: refused, the file as it was.
      const changed = newerCopy('early-refused');
      appendFileSync(join(changed.dir, 'orders', '2024-01-05.csv'), 'shop-1,o-new,c-1,2024-01-05T10:00:00.000Z,EUR,1,1.21,CZ,false,completed\n');
      const kept = sha(changed.file);
      await expect(appendDataset(changed.dir, changed.file, suiteThreadsOption(), copyEarly(changed.dir, changed.file))).rejects.toThrow(/changed since it was imported/);
      expect(sha(changed.file)).toBe(kept);
      expect(staged(changed.file)).toEqual([]);
      // The copy removed before the update opens it (by an import in another PID namespace that took it for a gone run's): said so, nothing written.
      const lost = newerCopy('early-lost');
      writeDays(lost.dir, 'orders', 'datetime', '2024-01-21', '2024-01-21');
      utimesSync(join(lost.dir, 'orders', '2024-01-21.csv'), NOW, NOW);
      const unchanged = sha(lost.file);
      const early = copyEarly(lost.dir, lost.file)!;
      await early.copy.ready;
      rmSync(early.copy.staging);
      await expect(appendDataset(lost.dir, lost.file, suiteThreadsOption(), early)).rejects.toThrow(/^cannot write .*early-lost\.duckdb: its staging file early-lost\.duckdb\.tmp-\d+-[0-9a-f]{8} is gone/);
      expect(sha(lost.file)).toBe(unchanged);
      expect(staged(lost.file)).toEqual([]);
    });
  });

  it('refuses a file without the list of its files (--split-plugins), and flags that do not go with --append', async () => {
    const split = join(root, 'split');
    expect((await cli(['data', 'import', base, '--split-plugins', '--into', split])).code).toBe(0);
    const run = await append(base, join(split, 'shop-1.duckdb'));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/it does not name the files it was imported from/);
    // a plugin's file: the hint writes the directory again (a full import into it would hold every plugin under one's name)
    expect(run.stderr).toContain(`\n  it looks like a plugin's file of --split-plugins: write the directory's files again: convx data import ${base} --split-plugins --into ${split}/ --force\n`);
    expect(run.stderr).not.toContain(`--into ${join(split, 'shop-1.duckdb')} --force`);
    // the same file under another name: not one of a plugin directory, the full import's hint
    copyFileSync(join(split, 'shop-1.duckdb'), join(root, 'renamed.duckdb'));
    expect((await append(base, join(root, 'renamed.duckdb'))).stderr).toContain(`run a full import instead: convx data import ${base} --into ${join(root, 'renamed.duckdb')} --force`);
    expect((await append(base, join(root, 'none.duckdb'))).stderr).toMatch(/--append: .*none\.duckdb does not exist/);
    expect(existsSync(join(root, 'none.duckdb'))).toBe(false);
    expect((await append(base, baseFile, '--force')).stderr).toMatch(/--append updates --into in place; drop --force/);
    const currency = await append(base, baseFile, '--reference-currency', 'USD');
    expect(currency.stderr).toMatch(/was imported without --reference-currency; an update keeps it/);
    // The hint names the dataset given, not a placeholder.
    expect(currency.stderr).toContain(`convx data import ${base} --into ${baseFile} --force --reference-currency USD`);
  });
});
