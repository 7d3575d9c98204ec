/**
 * A table's folder of CSV files whose line endings differ (one LF, one CRLF: exports of different
 * days from different systems) reads as the concatenation of its files, each read with its own
 * line ending: the same answers, row ids and line numbers as files that all end alike.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '../src/errors.js';
import { Database } from '../src/local/db.js';
import { appendDataset } from '../src/local/import-append.js';
import { importDataset } from '../src/local/import-writer.js';
import { ident, join as joinSql, literal, sql } from '../src/local/sql.js';
import { cli, dataset, SAMPLES, suiteThreadsOption, tempDir, withBackend } from './helpers.js';
import { keptCli } from './kept-backends.js';
import { sameTables } from './import-compare.js';

const TABLES = ['assets', 'contacts', 'fx', 'plugins', 'sources', 'touches'];
const ORDERS = readFileSync(join(SAMPLES, 'orders.csv'), 'utf8');
const [HEADER, ...ROWS] = ORDERS.split('\n').filter((l) => l !== '');

const crlf = (text: string) => text.replaceAll('\n', '\r\n');

/** The sample dataset with its orders in two files, orders/00.csv and orders/01.csv, each LF or CRLF. */
function split(first: 'LF' | 'CRLF', second: 'LF' | 'CRLF', rows = ROWS, at = 200): string {
  const file = (lines: string[], ending: 'LF' | 'CRLF') => {
    const text = [HEADER, ...lines].join('\n') + '\n';
    return ending === 'CRLF' ? crlf(text) : text;
  };
  const files: Record<string, string> = { 'orders/00.csv': file(rows.slice(0, at), first), 'orders/01.csv': file(rows.slice(at), second) };
  for (const t of TABLES) files[`${t}.csv`] = readFileSync(join(SAMPLES, `${t}.csv`), 'utf8');
  return dataset(files);
}

/** What commands print over a dataset, read once (the items lent the report's backend: kept-backends.ts): a report and every item, as JSON (but the data version). */
async function answers(dir: string): Promise<string[]> {
  const out: string[] = [];
  const local = keptCli();
  try {
    for (const command of ['report', 'items']) {
      const result = await local([command, '--data', dir, '--from', '2024-01-01', '--to', '2024-12-31', '-o', 'json', ...(command === 'items' ? ['--all'] : [])]);
      expect(result.stderr, command).toBe('');
      expect(result.code, command).toBe(0);
      // The data version is a hash of the files' bytes, which differ in their line endings.
      out.push(result.stdout.replace(/"dataVersion": "[^"]*"/g, '"dataVersion": "-"'));
    }
  } finally {
    await local.close();
  }
  return out;
}

/** Every imported table's rows (row ids with them), as a count and a sum of their hashes. */
async function importedTables(dir: string): Promise<string> {
  const file = join(tempDir(), 'x.duckdb');
  await importDataset(dir, file, suiteThreadsOption());
  const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
  try {
    await db.exec(sql`ATTACH ${literal(file)} AS f (READ_ONLY)`);
    const names = await db.all<{ s: string; t: string }>(
      sql`SELECT schema_name AS s, table_name AS t FROM duckdb_tables() WHERE database_name = 'f' AND table_name <> 'convx_dataset'`,
    );
    const parts = names.map(({ s, t }) => sql`SELECT ${`${s}.${t}`} AS name, count(*) AS n, CAST(sum(CAST(hash(x) AS HUGEINT)) AS VARCHAR) AS h FROM f.${ident(s)}.${ident(t)} x`);
    return JSON.stringify(await db.all(sql`${joinSql(parts, sql` UNION ALL `)} ORDER BY name`), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  } finally {
    db.close();
  }
}

describe('a folder of CSV files with different line endings', () => {
  let lfOnly: string[];
  let lfTables: string;
  beforeAll(async () => {
    const dir = split('LF', 'LF');
    lfOnly = await answers(dir);
    lfTables = await importedTables(dir);
  });

  it('reads LF then CRLF, and CRLF then LF, as files that all end in LF: the same answers and imported rows (row ids too)', async () => {
    for (const [first, second] of [
      ['LF', 'CRLF'],
      ['CRLF', 'LF'],
    ] as const) {
      const dir = split(first, second);
      expect(await answers(dir), `${first} + ${second}`).toEqual(lfOnly);
      expect(await importedTables(dir), `${first} + ${second}`).toBe(lfTables);
    }
  });

  it('reads a CRLF file with a quoted line break after an LF file as files that all end in CRLF', async () => {
    const rows = [...ROWS];
    rows[300] = rows[300]!.replace(/,completed$/, ',"comp\nleted"');
    const mixed = split('LF', 'CRLF', rows);
    const same = split('CRLF', 'CRLF', rows);
    expect(await answers(mixed)).toEqual(await answers(same));
    const tables = await importedTables(mixed);
    expect(tables).toBe(await importedTables(same));
    // The quoted value was read (the orders differ from the LF files'), with its CRLF kept.
    expect(tables).not.toBe(lfTables);
  });

  it('reads a CRLF file whose header names the columns in another order, or one more, as an LF file: by name, the extra column not read', async () => {
    const order = HEADER!.split(',');
    const swapped = (line: string) => {
      const cells = line.split(',');
      return [cells[1], cells[0], ...cells.slice(2)].join(',');
    };
    const swappedHeader = () => swapped(HEADER!);
    const rows = ROWS.slice(200);
    for (const [what, text] of [
      ['another order', [swapped(HEADER!), ...rows.map(swapped)].join('\n') + '\n'],
      ['one more column', [`${HEADER},note`, ...rows.map((r) => `${r},x`)].join('\n') + '\n'],
      ['a name in another case', [HEADER!.replace('country', 'Country'), ...rows].join('\n') + '\n'],
    ] as const) {
      expect(order[0]).toBe('order_id');
      // As the LF files of the same columns in the same order read: the one read of LF files takes them so too.
      const mixed = split('LF', 'LF');
      writeFileSync(join(mixed, 'orders', '01.csv'), crlf(text));
      expect(await answers(mixed), what).toEqual(lfOnly);
      expect(await importedTables(mixed), what).toBe(lfTables);
    }
    // The one read of LF files, for the record: the same (a column by name, the extra one not read).
    const lf = split('LF', 'LF');
    writeFileSync(join(lf, 'orders', '01.csv'), [`${swappedHeader()},note`, ...ROWS.slice(200).map((r) => `${swapped(r)},x`)].join('\n') + '\n');
    expect(await importedTables(lf)).toBe(lfTables);
  });

  it('names a bad value in the second (CRLF) file with its file and line, past a quoted line break', async () => {
    const rows = [...ROWS];
    rows[210] = rows[210]!.replace(/,completed$/, ',"comp\nleted"');
    const cells = rows[250]!.split(',');
    cells[4] = 'ten';
    rows[250] = cells.join(',');
    const error = await withBackend(split('LF', 'CRLF', rows), async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    // Row 250 is the 51st of orders/01.csv: line 52 after its header, and one more for the line break.
    expect((error as Error).message).toContain('orders/01.csv, line 53, column amount_wo_tax: "ten" is not a decimal number');
  });

  it('still refuses files of different columns (a column missing, or one convx reads only in a later file), and a file that mixes line endings within itself', async () => {
    // A file without columns the first file has, ending as the others or otherwise: the file and a column named.
    for (const ending of ['LF', 'CRLF'] as const) {
      const dir = split('LF', ending);
      writeFileSync(join(dir, 'orders', '02.csv'), ending === 'CRLF' ? 'order_id,contact_id\r\no-x,c-1\r\n' : 'order_id,contact_id\no-x,c-1\n');
      const columns = await cli(['report', '--data', dir, '--from', '2024-01-01', '--to', '2024-12-31']);
      expect(columns.code, ending).toBe(2);
      expect(columns.stderr, ending).toMatch(
        /^convx: error: cannot read orders\/: its files do not have the same columns:\n {2}orders\/02\.csv has no column \w+, which orders\/0[01]\.csv has\n {2}give every file of the folder the same header/,
      );
    }
    // The second file alone (CRLF, read on its own) without a column of the first: named as the reader of its run finds it.
    const lacking = split('LF', 'CRLF');
    const at = HEADER!.split(',').indexOf('country');
    const without = (line: string) => line.split(',').filter((_, i) => i !== at).join(',');
    writeFileSync(join(lacking, 'orders', '01.csv'), crlf([without(HEADER!), ...ROWS.slice(200).map(without)].join('\n') + '\n'));
    const run = await cli(['report', '--data', lacking, '--from', '2024-01-01', '--to', '2024-12-31']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('cannot read orders/: its files do not have the same columns:\n  orders/01.csv has no column country, which orders/00.csv has\n');
    // The first file (LF) without a column that the second (CRLF, read on its own) has: refused from the headers.
    const more = split('LF', 'CRLF');
    writeFileSync(join(more, 'orders', '00.csv'), [without(HEADER!), ...ROWS.slice(0, 200).map(without)].join('\n') + '\n');
    const extra = await cli(['report', '--data', more, '--from', '2024-01-01', '--to', '2024-12-31']);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('cannot read orders/: its files do not have the same columns:\n  orders/01.csv has a column country, which orders/00.csv lacks\n');
    const within = split('LF', 'CRLF');
    writeFileSync(join(within, 'orders', '01.csv'), `${HEADER}\r\n${ROWS[0]}\n${ROWS[1]}\r\n`);
    const mixed = await cli(['report', '--data', within, '--from', '2024-01-01', '--to', '2024-12-31']);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('orders/01.csv, line 2: this line ends in LF, the lines before it in CRLF');
  });
});

describe('data import --append of a CRLF file onto an LF import', () => {
  it('holds what a full import of the same files holds', async () => {
    const dir = split('LF', 'CRLF');
    const second = readFileSync(join(dir, 'orders', '01.csv'));
    rmSync(join(dir, 'orders', '01.csv'));
    const out = tempDir();
    const appended = join(out, 'appended.duckdb');
    const full = join(out, 'full.duckdb');
    await importDataset(dir, appended, suiteThreadsOption());
    writeFileSync(join(dir, 'orders', '01.csv'), second);
    await appendDataset(dir, appended, suiteThreadsOption());
    await importDataset(dir, full, suiteThreadsOption());
    await sameTables(full, appended, 'LF import + CRLF append');
  });
});
