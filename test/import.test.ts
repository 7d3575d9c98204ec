/**
 * `convx data import DIR --into FILE.duckdb`: the file every command reads with --data must
 * answer byte for byte as the directory it came from. The directory's answers come from a
 * period's own attribution and the transactions; the file's from the attribution the import
 * stored and, for reports without --country/--currency, from its per-day sums (report_day,
 * contact_day). These tests fail if either way drifts from the other.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/tenants.js';
import { cli, csv, dataset, ORDER_HEADER, SAMPLES, SOURCE_HEADER, tempDir, TOUCH_HEADER, type CliResult } from './helpers.js';

const root = tempDir('convx-import-');
const DELIVERIES = join(SAMPLES, '..', 'deliveries');
const ALL_TIME: [string, string] = ['1900-01-01', '9999-12-31'];

/** Imports dir into root/name (or a path given whole) and returns the file. */
async function importInto(dir: string, name: string, ...extra: string[]): Promise<string> {
  const file = name.includes('/') ? name : join(root, name);
  const run = await cli(['data', 'import', dir, '--into', file, ...extra]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/wrote .* MB\) in [\d.]+ s: orders/);
  return file;
}

let compared = 0;
/**
 * Runs argv on the directory and on the imported file: the same stdout byte for byte, the same
 * exit code, and the same stderr once the dataset's path is named alike.
 */
async function same(argv: string[], dir: string, file: string, expectedCode = 0): Promise<CliResult> {
  const [a, b] = await Promise.all([cli([...argv, '--data', dir]), cli([...argv, '--data', file])]);
  const label = `${argv.join(' ')} (${dir})`;
  expect(a.code, `${label}: ${a.stderr}`).toBe(expectedCode);
  expect(b.stdout, label).toBe(a.stdout);
  expect(b.code, `${label}: ${b.stderr}`).toBe(a.code);
  expect(b.stderr.replaceAll(file, '<data>'), label).toBe(a.stderr.replaceAll(dir, '<data>'));
  compared++;
  return a;
}

const period = ([from, to]: [string, string]) => ['--from', from, '--to', to];
const addDays = (day: string, n: number) => new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

interface Rec {
  orderId: string;
  contactId: string;
  datetime: string;
  isRefund: boolean;
  source: { id: string; detailUrl: string };
}
const jsonl = <T>(text: string): T[] => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);

/** Every record of the dataset (from the directory), with its first and last day. */
async function everything(dir: string, extra: string[] = []) {
  const run = await cli(['items', '--data', dir, ...period(ALL_TIME), '--all', '-o', 'jsonl', '--sort', 'datetime', ...extra]);
  expect(run.code, run.stderr).toBe(0);
  const records = jsonl<Rec>(run.stdout);
  expect(records.length).toBeGreaterThan(50);
  return { records, first: records[0]!.datetime.slice(0, 10), last: records.at(-1)!.datetime.slice(0, 10) };
}

/**
 * The periods around a dataset whose transactions run from first to last: before and after
 * them, their edge days alone, spans over the edges, a single day, a month, everything.
 */
function periodsAround(first: string, last: string, middle: string): [string, string][] {
  return [
    [addDays(first, -400), addDays(first, -1)],
    [addDays(first, -3), first],
    [first, first],
    [first, addDays(first, 6)],
    [middle, middle],
    [middle, addDays(middle, 30)],
    [addDays(last, -20), addDays(last, 5)],
    [last, last],
    [addDays(last, 1), addDays(last, 90)],
    ALL_TIME,
  ];
}

/** The comparisons of section 1 on one dataset (plugin: extra flags such as --plugin). */
async function compareEverywhere(
  dir: string,
  file: string,
  extra: string[],
  ids: { converted: string; notConverted: string; notConvertedReason: RegExp },
): Promise<void> {
  const { records, first, last } = await everything(dir, extra);
  const middle = records[Math.floor(records.length / 2)]!.datetime.slice(0, 10);
  const periods = periodsAround(first, last, middle);

  // Every period: the report (per-day sums in the file) and every record.
  for (const p of periods) {
    await same(['report', ...extra, ...period(p), '-o', 'json', '--limit', '1000'], dir, file);
    await same(['items', ...extra, ...period(p), '--all', '-o', 'jsonl'], dir, file);
  }

  // The flags, on a month, a single day and everything.
  const full = [[middle, addDays(middle, 30)], [first, first], ALL_TIME] as [string, string][];
  for (const p of full) {
    const base = [...extra, ...period(p)];
    const report = JSON.parse((await same(['report', ...base, '-o', 'json', '--limit', '1000'], dir, file)).stdout) as {
      conversions: { name: string; source: { detailUrl: string; id: string; type: string } }[];
    };
    const word = report.conversions[0]?.name.split(/\s+/)[0]?.toLowerCase() ?? 'x';
    const runs: string[][] = [
      ['report', ...base, '-o', 'csv'],
      ['report', ...base, '--breakdown', '-o', 'csv'],
      ['report', ...base, '-o', 'tsv', '--all'],
      ['report', ...base, '-o', 'json', '-q', word],
      ['report', ...base, '-o', 'json', '-q', 'no such source name'],
      ['report', ...base, '-o', 'json', '--country', 'CZ,SK'],
      ['report', ...base, '-o', 'json', '--currency', 'CZK'],
      ['report', ...base, '-o', 'json', '--currency', 'EUR,PLN', '--country', 'PL'],
      ['report', ...base, '-o', 'csv', '--sort', 'name'],
      ['report', ...base, '-o', 'csv', '--sort', '-uniqueContacts,id'],
      ['report', ...base, '-o', 'csv', '--sort', 'firstConversionAt,-lastConversionAt'],
      ['report', ...base, '-o', 'csv', '--sort', '-averageUniqueConversion,-refundsAmountWTax'],
      ['report', ...base, '-o', 'json', '--limit', '3', '--offset', '2'],
      ['report', ...base, '-o', 'json', '--limit', '4', '--offset', '1', '--sort', 'conversionsNumber'],
      ['report', ...base, '-o', 'jsonl', '--all', '--offset', '5'],
      ['items', ...base, '-o', 'json'],
      ['items', ...base, '-o', 'json', '--limit', '7', '--offset', '3', '--sort', 'conversionsReferenceAmount'],
      ['items', ...base, '--all', '-o', 'csv'],
      ['items', ...base, '--all', '-o', 'jsonl', '--country', 'CZ', '--currency', 'EUR,CZK'],
      ['items', ...base, '-o', 'json', '--order', ids.converted],
      ['items', ...base, '-o', 'json', '--contact', records[0]!.contactId],
      ['items', ...base, '-o', 'json', '--contact', records.at(-1)!.contactId, '--source-type', 'campaign'],
    ];
    for (const row of report.conversions.slice(0, 4)) {
      runs.push(['drill', row.source.detailUrl, ...base, '--all', '-o', 'jsonl']);
      runs.push(['drill', `${row.source.type}:${row.id}`, ...base, '-o', 'csv', '--limit', '5']);
    }
    for (const argv of runs) await same(argv, dir, file);
  }

  // Orders: attributed (as a card and as json, within and outside a period), not converted, unknown.
  await same(['order', ids.converted, ...extra], dir, file);
  await same(['order', ids.converted, ...extra, '-o', 'json'], dir, file);
  await same(['order', ids.converted, ...extra, ...period([addDays(first, -400), addDays(first, -1)])], dir, file, 1);
  const not = await same(['order', ids.notConverted, ...extra], dir, file, 1);
  expect(not.stderr).toMatch(ids.notConvertedReason);
  const unknown = await same(['order', 'no-such-order', ...extra, '-o', 'json'], dir, file, 1);
  expect(unknown.stderr).toMatch(/order no-such-order is not in the dataset/);
}

describe('the imported file answers as its directory', () => {
  it('samples/shop: report, items, drill and order over many periods', async () => {
    const file = await importInto(SAMPLES, 'shop.duckdb');
    expect(statSync(file).size).toBeGreaterThan(0);
    expect(readFileSync(file).subarray(8, 12).toString('latin1')).toBe('DUCK');
    const orders = readFileSync(join(SAMPLES, 'orders.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
    const cancelled = orders.find((o) => o[8] === 'cancelled')![0]!;
    const { records } = await everything(SAMPLES);
    const refunded = records.find((r) => r.isRefund)!.orderId;
    const before = compared;
    await compareEverywhere(SAMPLES, file, [], {
      converted: refunded,
      notConverted: cancelled,
      notConvertedReason: new RegExp(`order ${cancelled} is not a conversion:\\n.*cancelled`),
    });
    expect(compared - before).toBeGreaterThan(100);
  });

  describe('generated data (parquet)', () => {
    let gen: string;
    let gen3: string;
    beforeAll(async () => {
      gen = join(root, 'gen');
      gen3 = join(root, 'gen3');
      const args = ['--orders', '3000', '--touches', '30000', '--contacts', '400', '--file-format', 'parquet'];
      for (const [out, more] of [[gen, []], [gen3, ['--plugins', '3']]] as const) {
        const run = await cli(['data', 'generate', '--out', out, ...args, ...more]);
        expect(run.code, run.stderr).toBe(0);
      }
    });

    /** A converted order with a refund and a cancelled order of the plugin, from the files. */
    async function ids(dir: string, extra: string[]) {
      const { records } = await everything(dir, extra);
      const converted = records.find((r) => r.isRefund)!.orderId;
      const instance = await DuckDBInstance.create();
      const connection = await instance.connect();
      try {
        const plugin = extra[1];
        const reader = await connection.runAndReadAll(
          `SELECT order_id FROM '${join(dir, 'orders.parquet')}' WHERE status = 'cancelled' ${plugin ? `AND plugin_id = '${plugin}'` : ''} ORDER BY order_id LIMIT 1`,
        );
        const notConverted = String(reader.getRowObjects()[0]!.order_id);
        return { converted, notConverted, notConvertedReason: new RegExp(`order ${notConverted} is not a conversion:\\n.*cancelled`) };
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    }

    it('one plugin', async () => {
      const file = await importInto(gen, 'gen.duckdb');
      await compareEverywhere(gen, file, [], await ids(gen, []));
    });

    it('three plugins, each with --plugin (shop-2 reports in CZK)', async () => {
      const file = await importInto(gen3, 'gen3.duckdb');
      for (const plugin of ['shop-1', 'shop-2', 'shop-3']) {
        const extra = ['--plugin', plugin];
        const { records, first, last } = await everything(gen3, extra);
        const middle = records[Math.floor(records.length / 2)]!.datetime.slice(0, 10);
        for (const p of periodsAround(first, last, middle)) {
          await same(['report', ...extra, ...period(p), '-o', 'json', '--limit', '1000'], gen3, file);
        }
        await same(['items', ...extra, ...period(ALL_TIME), '--all', '-o', 'jsonl'], gen3, file);
      }
      await compareEverywhere(gen3, file, ['--plugin', 'shop-2'], await ids(gen3, ['--plugin', 'shop-2']));
      // Without --plugin, both refuse alike.
      const refused = await same(['report', ...period(ALL_TIME)], gen3, file, 2);
      expect(refused.stderr).toMatch(/holds 3 plugins \(shop-1, shop-2, shop-3\); choose one with --plugin/);
      await same(['report', '--plugin', 'shop-9'], gen3, file, 2);
    });
  });
});
