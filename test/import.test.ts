/**
 * `convx data import DIR --into FILE.duckdb`: every command given `--data FILE.duckdb` must
 * answer byte for byte as it does from the directory. The directory's answers come from the
 * period's own attribution and its transactions; the file's from the attribution the import
 * stored and, for a report without --country/--currency, from the per-day sums (report_day,
 * contact_day with prev_day for unique contacts). Each comparison fails if either path drifts.
 *
 * A CLI call on a directory costs 0.15-0.3 s (read, check, type the files); on the file about
 * 0.05 s. So the sweep over many periods compares the two local backends (one open each, the
 * same objects the commands print), and the CLI is compared on a chosen set of commands, each
 * dataset opened by the first of them that names it with its flags and lent to the next ones.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBackend } from '../src/local/backend.js';
import { openLocalBackend } from '../src/local/open.js';
import { IMPORT_VERSION } from '../src/local/imported.js';
import type { ConversionRecord } from '../src/model/types.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, csv, dataset, itemsQuery, ORDER_HEADER, reportQuery, SAMPLES, shop, tempDir, type CliResult, suiteThreadsOption } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const root = tempDir('convx-import-');

/**
 * The tables and columns of samples/shop imported, per format version of the file (IMPORT_VERSION;
 * version 1 keyed the per-day sums by source type and id and had no unpriced count).
 */
const VERSION_2 = [
  'main.convx_dataset: key value',
  'main.t_assets: row_id plugin_id asset_id language subject html text preheader',
  'main.t_contacts: row_id plugin_id contact_id client_contact_id email first_name surname language country consent unsubscribed lists',
  'main.t_fx: row_id plugin_id date currency rate reference_currency',
  'main.t_orders: row_id plugin_id order_id contact_id datetime currency amount_wo_tax amount_w_tax country is_refund status',
  'main.t_plugins: row_id plugin_id plugin_id_1 reference_currency name',
  'main.t_sources: row_id plugin_id source_type source_id name campaign_id smartflow_id smartflow_name delivery_id delivery_name started_at',
  'main.t_touches: plugin_id contact_id datetime touch source_type source_id',
  'scope_0.contact_day: day source_key prev_day',
  'scope_0.conv: row_id order_id contact_id datetime is_refund currency country amount_wo_tax amount_w_tax day fx_date ref_wo ref_w touch_datetime order_datetime centi_hours source_type source_id name campaign_id smartflow_id smartflow_name delivery_id delivery_name started_at client_contact_id first_name surname',
  'scope_0.report_day: day source_key currency n wo w rn rwo rw ref_wo ref_w ref_rwo ref_rw first_at last_at unpriced',
  'scope_0.source_info: source_type source_id name campaign_id smartflow_id smartflow_name delivery_id delivery_name started_at source_key',
];
const LAYOUTS: Record<number, string[]> = {
  // the per-day sums keyed by source_info.source_key, with report_day.unpriced
  2: VERSION_2,
  // version 2 and the per-day sums over every source (series and totals from the sums)
  3: [...VERSION_2, 'scope_0.plugin_contact_day: day prev_day', 'scope_0.plugin_day: day first_at last_at n wo w rn rwo rw breakdown uc'].sort(),
};
// the layout of version 3, its times to the millisecond (a file of version 3 attributed by microseconds)
LAYOUTS[4] = LAYOUTS[3]!;
const DELIVERIES = join(SAMPLES, '..', 'deliveries');
const ALL_TIME: [string, string] = ['1900-01-01', '9999-12-31'];
type Period = [string, string];

/** Imports dir into root/name (or into a path given whole) and returns the file. */
async function importInto(dir: string, name: string, ...extra: string[]): Promise<string> {
  const file = name.startsWith('/') ? name : join(root, name);
  const run = await cli(['data', 'import', dir, '--into', file, ...extra]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/wrote .* MB\) in [\d.]+ s: /);
  expect(readFileSync(file).subarray(8, 12).toString('latin1')).toBe('DUCK');
  return file;
}

let samplesImport: Promise<string> | undefined;
/** samples/shop imported once for the whole file (a copy where a test changes it). */
const samplesImported = () => (samplesImport ??= importInto(SAMPLES, 'shop.duckdb'));

/** Text with the data version (paging.dataVersion, a hash of the files: a directory's and its import's differ) named alike. */
const anyVersion = (text: string) => text.replace(/"dataVersion": ?"[\w-]+"/g, '"dataVersion":"<version>"');

/**
 * The commands of same(), each dataset (the directory, the file) opened by the first command that
 * names it with its --plugin and --reference-currency and lent to the next (kept-backends.ts): a
 * directory is read, checked and typed once, not once per command.
 */
const kept = keptBackends();

/**
 * Runs argv with --data dir and with --data file: the same stdout byte for byte (but the data version), the same exit
 * code (expectedCode unless null) and the same stderr once the dataset's path is named alike.
 */
async function same(
  argv: string[],
  dir: string,
  file: string,
  expectedCode: number | null = 0,
  options: Parameters<typeof cli>[1] = {},
): Promise<CliResult> {
  const [a, b] = await Promise.all([kept([...argv, '--data', dir], options), kept([...argv, '--data', file], options)]);
  const label = `${argv.join(' ')} on ${dir}`;
  if (expectedCode !== null) expect(a.code, `${label}: ${a.stderr}`).toBe(expectedCode);
  expect(anyVersion(b.stdout), label).toBe(anyVersion(a.stdout));
  expect(b.code, `${label}: ${b.stderr}`).toBe(a.code);
  expect(b.stderr.replaceAll(file, '<data>'), label).toBe(a.stderr.replaceAll(dir, '<data>'));
  return a;
}

/** same() for each argv, two at a time (a directory's run is mostly waiting on DuckDB). */
async function allSame(runs: string[][], dir: string, file: string): Promise<CliResult[]> {
  const results: CliResult[] = [];
  for (let i = 0; i < runs.length; i += 2) results.push(...(await Promise.all(runs.slice(i, i + 2).map((argv) => same(argv, dir, file)))));
  return results;
}

const flags = ([from, to]: Period) => ['--from', from, '--to', to];
const addDays = (day: string, n: number) => new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

async function collect<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

/** What the report and items commands print for a period, as the backend hands it to them. */
async function answers(backend: LocalBackend, [from, to]: Period): Promise<string> {
  const report = await backend.allReport(reportQuery(from, to));
  const items = await backend.allItems(itemsQuery(from, to, { sort: [{ field: 'datetime', descending: true }] }));
  return anyVersion(JSON.stringify({
    report: { total: report.totalCount, rows: await collect(report.rows) },
    page: await backend.report(
      reportQuery(from, to, { limit: 4, offset: 1, sort: [{ field: 'uniqueContacts', descending: true }, { field: 'lastConversionAt', descending: false }] }),
    ),
    items: { total: items.totalCount, rows: await collect(items.rows) },
  }));
}

/**
 * The periods around transactions that run from first to last: before and after them, their
 * edge days alone, spans over the edges, a single day in the middle, a month, everything.
 */
function periodsAround(first: string, last: string, middle: string): Period[] {
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

/**
 * Compares the answers of the directory and the file (each opened once, kept for same()) for every period
 * around the data; returns every record of the dataset (from the directory) and its edges.
 */
async function sweep(dir: string, file: string, plugin?: string, only?: number[]) {
  // the backends the commands of same() are lent (opened here when the sweep comes first)
  const options = plugin ? { plugin } : {};
  const [fromDir, fromFile] = await Promise.all([kept.backend(dir, options), kept.backend(file, options)]);
  try {
    // The file reads the attribution it stores, summed per day; the directory attributes per period.
    expect(fromFile.scope.summarised).toBe(true);
    expect(fromDir.scope.summarised).toBe(false);
    const all = await fromDir.allItems(itemsQuery(...ALL_TIME));
    const records = await collect(all.rows);
    expect(records.length).toBeGreaterThan(100);
    const days = records.map((r) => r.datetime.slice(0, 10)).sort();
    const [first, last, middle] = [days[0]!, days.at(-1)!, days[Math.floor(days.length / 2)]!];
    const periods = periodsAround(first, last, middle);
    let nonEmpty = 0;
    for (const period of periods.filter((_, i) => !only || only.includes(i))) {
      const [expected, actual] = await Promise.all([answers(fromDir, period), answers(fromFile, period)]);
      expect(actual, `${dir} ${plugin ?? ''} ${period.join('..')}`).toBe(expected);
      if ((JSON.parse(expected) as { report: { total: number } }).report.total > 0) nonEmpty++;
    }
    expect(nonEmpty).toBeGreaterThanOrEqual(only ? only.length - 2 : 7);
    return { records, first, last, middle };
  } finally {
    await Promise.all([fromDir.close(), fromFile.close()]);
  }
}

/** A converted order (one with a refund, when there is one) and the contact with the most records. */
function picks(records: ConversionRecord[]) {
  const converted = (records.find((r) => r.isRefund) ?? records[0]!).orderId;
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.contactId, (counts.get(r.contactId) ?? 0) + 1);
  const contact = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
  return { converted, contact };
}

describe('the imported file answers as its directory', () => {
  let shopFile: string;
  beforeAll(async () => {
    shopFile = await samplesImported();
  });

  it('samples/shop: every period around the data, and report, items, drill and order on the command line', async () => {
    const { records, first } = await sweep(SAMPLES, shopFile);
    const { converted, contact } = picks(records);
    const orders = readFileSync(join(SAMPLES, 'orders.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
    const cancelled = orders.find((o) => o[8] === 'cancelled')![0]!;
    const period = ['--from', '2024-01-01', '--to', '2024-04-30'];
    const report = await same(['report', ...period, '-o', 'json'], SAMPLES, shopFile);
    const body = JSON.parse(report.stdout) as { conversions: { source: { detailUrl: string; type: string } }[] };
    expect(body.conversions.length).toBeGreaterThan(10);
    const runs: string[][] = [
      ['report', ...period, '-o', 'csv', '--sort', '-uniqueContacts,id'],
      ['report', ...period, '--breakdown', '-o', 'csv'],
      ['report', ...period, '-o', 'json', '-q', 'WELCOME', '--sort', 'firstConversionAt'],
      ['report', ...period, '-o', 'json', '--country', 'CZ,SK'],
      ['report', ...period, '-o', 'json', '--currency', 'CZK'],
      ['report', ...period, '-o', 'json', '--limit', '3', '--offset', '2', '--sort', '-averageUniqueConversion,lastConversionAt'],
      ['report', ...flags([first, addDays(first, 1)]), '-o', 'tsv', '--sort', 'name'],
      ['items', ...period, '-o', 'json'],
      ['items', ...period, '--all', '-o', 'csv'],
      ['items', ...flags(ALL_TIME), '--all', '-o', 'jsonl', '--contact', contact],
      ['items', ...flags(ALL_TIME), '-o', 'json', '--order', converted],
      ['drill', body.conversions.find((r) => r.source.type === 'smartflow')!.source.detailUrl, ...period, '--all', '-o', 'jsonl'],
      // and runs the generated data's command line leaves to this one (see commandLine)
      ['report', ...period, '-o', 'json', '--currency', 'EUR,PLN', '--country', 'PL,SK'],
      ['report', ...period, '-o', 'jsonl', '--all', '--offset', '3', '--limit', '2'],
      ['drill', body.conversions.at(-1)!.source.detailUrl, ...period, '-o', 'json', '--limit', '5', '--offset', '1'],
    ];
    for (const run of await allSame(runs, SAMPLES, shopFile)) expect(run.stdout.length).toBeGreaterThan(100);
    // Orders: attributed (its card), attributed outside the period asked, not converted, unknown.
    const card = await same(['order', converted], SAMPLES, shopFile, 0, { tty: true, env: { NO_COLOR: '1' } });
    expect(card.stdout).toContain(`Order ${converted}: a conversion of`);
    const outside = await same(['order', converted, '--from', '2020-01-01', '--to', '2020-01-31'], SAMPLES, shopFile, 1);
    expect(outside.stderr).toMatch(/is a conversion, but none of its transactions falls within 2020-01-01\.\.2020-01-31/);
    const why = await same(['order', cancelled], SAMPLES, shopFile, 1);
    expect(why.stderr).toMatch(new RegExp(`order ${cancelled} is not a conversion:\\n.*cancelled`));
    const unknown = await same(['order', 'no-such-order', '-o', 'json'], SAMPLES, shopFile, 3);
    expect(unknown.stderr).toMatch(/order no-such-order is not in the dataset/);
  });

  // A file of an older layout must be refused by readMeta's version check ("import the dataset
  // again"), never read and failed on later with a binder error: so a change of what the file
  // holds must raise IMPORT_VERSION, and this test, which pins the layout per version, says so.
  it('the layout of the file is the one of its format version (a change needs a new IMPORT_VERSION)', async () => {
    const instance = await DuckDBInstance.create();
    const connection = await instance.connect();
    try {
      await connection.run(`ATTACH '${shopFile.replaceAll("'", "''")}' AS f (READ_ONLY)`);
      const reader = await connection.runAndReadAll(
        `SELECT table_schema || '.' || table_name || ': ' || string_agg(column_name, ' ' ORDER BY ordinal_position) AS t
         FROM information_schema.columns WHERE table_catalog = 'f' GROUP BY table_schema, table_name ORDER BY 1`,
      );
      const layout = reader.getRowObjects().map((r) => String(r.t));
      expect(layout, `the layout of format ${IMPORT_VERSION}`).toEqual(LAYOUTS[IMPORT_VERSION]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  describe('generated data (parquet)', () => {
    let gen: string;
    let gen3: string;
    let genFile: string;
    let gen3File: string;
    beforeAll(async () => {
      gen = join(root, 'gen');
      gen3 = join(root, 'gen3');
      const args = ['--orders', '1500', '--touches', '15000', '--contacts', '400', '--file-format', 'parquet'];
      for (const [out, more] of [[gen, []], [gen3, ['--plugins', '3']]] as const) {
        const run = await cli(['data', 'generate', '--out', out, ...args, ...more]);
        expect(run.code, run.stderr).toBe(0);
      }
      [genFile, gen3File] = await Promise.all([importInto(gen, 'gen.duckdb'), importInto(gen3, 'gen3.duckdb')]);
    });

    /** The first cancelled order of the plugin, from the files. */
    async function cancelledOrder(dir: string, plugin?: string): Promise<string> {
      const instance = await DuckDBInstance.create();
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll(
          `SELECT order_id FROM read_parquet($path) WHERE status = 'cancelled' ${plugin ? 'AND plugin_id = $plugin' : ''} ORDER BY datetime LIMIT 1`,
          { path: join(dir, 'orders.parquet'), ...(plugin ? { plugin } : {}) },
        );
        return String(reader.getRowObjects()[0]!.order_id);
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    }

    /**
     * The command line on generated data: a report, its breakdown, every item, an order's card and
     * why another is not a conversion. Each other run of the samples' test (filters, search, pages
     * of --all, a contact's items, drill, an unknown order) reads the file as it does there; this
     * pins what differs: data from Parquet, larger, and a plugin of several.
     */
    async function commandLine(dir: string, file: string, records: ConversionRecord[], middle: string, extra: string[]) {
      const { converted } = picks(records);
      const month = [...extra, ...flags([middle, addDays(middle, 30)])];
      const report = JSON.parse((await same(['report', ...month, '-o', 'json', '--limit', '1000'], dir, file)).stdout) as { conversions: unknown[] };
      expect(report.conversions.length).toBeGreaterThan(5);
      await allSame([
        ['report', ...month, '--breakdown', '-o', 'csv', '--sort', '-uniqueContacts'],
        ['items', ...month, '--all', '-o', 'csv'],
      ], dir, file);
      const cancelled = await cancelledOrder(dir, extra[1]);
      const [card, why] = await Promise.all([
        same(['order', converted, ...extra, '-o', 'json'], dir, file),
        same(['order', cancelled, ...extra], dir, file, 1),
      ]);
      expect(JSON.parse(card.stdout).conversions.length).toBeGreaterThanOrEqual(2);
      expect(why.stderr).toMatch(new RegExp(`order ${cancelled} is not a conversion:\\n.*cancelled`));
    }

    it('one plugin: every period, and the command line', async () => {
      const { records, middle } = await sweep(gen, genFile);
      await commandLine(gen, genFile, records, middle, []);
    });

    it('three plugins (shop-2 in CZK): every period of each, and the command line with --plugin', async () => {
      let shop2: Awaited<ReturnType<typeof sweep>> | undefined;
      for (const plugin of ['shop-1', 'shop-2', 'shop-3']) {
        // Every period for shop-2; an edge day, a month and everything for the others.
        const swept = await sweep(gen3, gen3File, plugin, plugin === 'shop-2' ? undefined : [2, 5, 9]);
        if (plugin === 'shop-2') shop2 = swept;
      }
      expect(shop2!.records[0]!.referenceCurrency).toBe('CZK');
      await commandLine(gen3, gen3File, shop2!.records, shop2!.middle, ['--plugin', 'shop-2']);
      const [refused] = await Promise.all([
        same(['report', ...flags(ALL_TIME)], gen3, gen3File, 2),
        same(['items', '--plugin', 'shop-9', ...flags(ALL_TIME)], gen3, gen3File, 2),
      ]);
      expect(refused.stderr).toMatch(/holds 3 plugins \(shop-1, shop-2, shop-3\); choose one with --plugin/);
    });

    it('--reference-currency other than the import\'s attributes afresh, and equals the directory', async () => {
      const czkFile = await importInto(gen3, 'gen3-czk.duckdb', '--reference-currency', 'CZK');
      const month = ['--from', '2024-03-01', '--to', '2024-03-31'];
      const shop1 = ['--plugin', 'shop-1'];
      // shop-1 (EUR) imported in EUR, asked in CZK: attributed afresh.
      const czk = await same(['report', ...shop1, ...month, '-o', 'json', '--reference-currency', 'CZK'], gen3, gen3File);
      const rows = JSON.parse(czk.stdout).conversions as { referenceCurrency: string }[];
      expect(rows.length).toBeGreaterThan(5);
      expect(new Set(rows.map((r) => r.referenceCurrency))).toEqual(new Set(['CZK']));
      await same(['items', ...shop1, ...month, '--all', '-o', 'jsonl', '--reference-currency', 'czk'], gen3, gen3File);
      // Imported in CZK: asked in CZK it reads what it stores, asked in its own EUR it attributes afresh.
      expect(anyVersion((await cli(['report', ...shop1, ...month, '-o', 'json', '--data', czkFile, '--reference-currency', 'CZK'])).stdout)).toBe(anyVersion(czk.stdout));
      const eur = await same(['report', ...shop1, ...month, '-o', 'json'], gen3, czkFile);
      expect(eur.stdout).toMatch(/"referenceCurrency": ?"EUR"/);
      await same(['report', ...shop1, ...month, '--breakdown', '-o', 'csv'], gen3, czkFile);
      // shop-2 (CZK) in EUR.
      await same(['report', '--plugin', 'shop-2', ...month, '--reference-currency', 'EUR', '-o', 'json'], gen3, gen3File);
      // Which of them read the stored attribution (summarised) and which attributed afresh.
      const summarised = async (file: string, plugin: string, referenceCurrency?: string) => {
        const backend = await openLocalBackend(file, { ...suiteThreadsOption(), plugin, ...(referenceCurrency ? { referenceCurrency } : {}) });
        try {
          return backend.scope.summarised;
        } finally {
          await backend.close();
        }
      };
      expect(await summarised(gen3File, 'shop-1')).toBe(true);
      expect(await summarised(gen3File, 'shop-1', 'CZK')).toBe(false);
      expect(await summarised(czkFile, 'shop-1')).toBe(false);
      expect(await summarised(czkFile, 'shop-1', 'czk')).toBe(true);
      expect(await summarised(czkFile, 'shop-2')).toBe(true);
    });
  });
});

describe('unique contacts across days (per-day sums with prev_day)', () => {
  // c1 converts through k1 the day before the period (at its last instant), at the first instant of
  // the period, twice more in it, and once through k2 in between; c2 twice on one day through k1;
  // refunds in the period of c1, c2 and c3 (c3 has nothing else in it); k3 has only a refund in the
  // period; o11 (CZK, no rate) on 2024-03-20 makes any report that covers that day an error. c6
  // converts through automation k2, another source than campaign k2.
  const sources = [
    ['campaign', 'k1', 'Spring', '', '', '', '', '', '2024-02-01T00:00:00Z'],
    ['campaign', 'k2', 'Second', '', '', '', '', '', '2024-02-02T00:00:00Z'],
    ['automation', 'k3', 'Refunds only', '', '', '', '', '', '2024-02-03T00:00:00Z'],
    ['campaign', 'k9', 'Unpriced', '', '', '', '', '', '2024-02-04T00:00:00Z'],
    ['automation', 'k2', 'Automation with campaign k2\'s id', '', '', '', '', '', '2024-02-05T00:00:00Z'],
  ];
  const dir = shop({
    orders: [
      { id: 'o1', contact: 'c1', at: '2024-03-09T23:59:59.999Z', net: 10, gross: 12.1 },
      { id: 'o2', contact: 'c1', at: '2024-03-10T00:00:00.000Z', net: 10, gross: 12.1 },
      { id: 'o3', contact: 'c1', at: '2024-03-12T10:00:00Z', net: 20, gross: 24.2 },
      { id: 'o4', contact: 'c1', at: '2024-03-12T15:00:00Z', net: 5, gross: 6.05 },
      { id: 'o5', contact: 'c1', at: '2024-03-14T10:00:00Z', net: 30, gross: 36.3 },
      { id: 'o6', contact: 'c2', at: '2024-03-11T12:00:00Z', net: 40, gross: 48.4 },
      { id: 'o7', contact: 'c2', at: '2024-03-13T09:00:00Z', net: 50, gross: 60.5 },
      { id: 'o8', contact: 'c2', at: '2024-03-13T20:00:00Z', net: 60, gross: 72.6 },
      { id: 'o9', contact: 'c3', at: '2024-03-01T10:00:00Z', net: 70, gross: 84.7 },
      { id: 'o10', contact: 'c4', at: '2024-03-05T10:00:00Z', net: 80, gross: 96.8 },
      { id: 'o11', contact: 'c5', at: '2024-03-20T10:00:00Z', net: 1000, gross: 1210, currency: 'CZK' },
      { id: 'o12', contact: 'c6', at: '2024-03-12T12:00:00Z', net: 15, gross: 18.15 },
      { id: 'o1', contact: 'c1', at: '2024-03-11T08:00:00Z', net: -5, gross: -6.05, refund: true, status: 'refunded' },
      { id: 'o9', contact: 'c3', at: '2024-03-12T08:00:00Z', net: -7, gross: -8.47, refund: true, status: 'refunded' },
      { id: 'o10', contact: 'c4', at: '2024-03-13T12:00:00Z', net: -80, gross: -96.8, refund: true, status: 'refunded' },
      { id: 'o6', contact: 'c2', at: '2024-03-14T18:00:00Z', net: -40, gross: -48.4, refund: true, status: 'refunded' },
    ],
    touches: [
      { contact: 'c1', at: '2024-03-09T09:00:00Z', source: 'k1' },
      { contact: 'c1', at: '2024-03-12T14:00:00Z', source: 'k2' },
      { contact: 'c1', at: '2024-03-14T09:00:00Z', source: 'k1' },
      { contact: 'c2', at: '2024-03-11T11:00:00Z', source: 'k1' },
      { contact: 'c3', at: '2024-02-28T10:00:00Z', source: 'k1' },
      { contact: 'c4', at: '2024-03-04T10:00:00Z', source: 'k3', type: 'automation' },
      { contact: 'c5', at: '2024-03-19T10:00:00Z', source: 'k9' },
      { contact: 'c6', at: '2024-03-12T09:00:00Z', source: 'k2', type: 'automation' },
      { contact: 'c5', at: '2024-03-19T11:00:00Z', source: 'k1', touch: 'open' },
    ],
    fx: [['2024-03-01', 'PLN', '0.23']],
    sources,
  });
  let file: string;
  beforeAll(async () => {
    file = await importInto(dir, 'days.duckdb');
  });

  type Row = Record<string, unknown> & { id: string; uniqueContacts: number; source: { type: string } };
  const key = (r: Row) => `${r.source.type}:${r.id}`;
  const report = async (period: Period): Promise<Row[]> => {
    const run = await same(['report', ...flags(period), '-o', 'json'], dir, file);
    return (JSON.parse(run.stdout) as { conversions: Row[] }).conversions;
  };
  const pick = (rows: Row[], keys: string[]) =>
    Object.fromEntries(rows.map((r) => [key(r), Object.fromEntries(keys.map((k) => [k, r[k]]))]));

  it('the numbers of 2024-03-10..2024-03-14, computed by hand', async () => {
    const rows = await report(['2024-03-10', '2024-03-14']);
    expect(rows.map(key)).toEqual(['campaign:k1', 'automation:k2', 'campaign:k2', 'automation:k3']);
    const keys = [
      'conversionsNumber', 'conversionsAmountWoTax', 'conversionsAmountWTax', 'uniqueContacts', 'averageConversion', 'averageUniqueConversion',
      'refundsNumber', 'refundsAmountWoTax', 'refundsAmountWTax', 'grossConversionsNumber', 'grossConversionsAmountWoTax', 'grossConversionsAmountWTax',
      'firstConversionAt', 'lastConversionAt', 'sourceStartedAt',
    ];
    expect(pick(rows, keys)).toEqual({
      // o2 o3 o5 (c1), o6 o7 o8 (c2); refunds of o1 (c1), o9 (c3), o6 (c2)
      'campaign:k1': {
        conversionsNumber: 6, conversionsAmountWoTax: 210, conversionsAmountWTax: 254.1, uniqueContacts: 2,
        averageConversion: 42.35, averageUniqueConversion: 127.05,
        refundsNumber: 3, refundsAmountWoTax: -52, refundsAmountWTax: -62.92,
        grossConversionsNumber: 9, grossConversionsAmountWoTax: 158, grossConversionsAmountWTax: 191.18,
        firstConversionAt: '2024-03-10T00:00:00.000Z', lastConversionAt: '2024-03-14T10:00:00.000Z', sourceStartedAt: '2024-02-01T00:00:00.000Z',
      },
      'campaign:k2': {
        conversionsNumber: 1, conversionsAmountWoTax: 5, conversionsAmountWTax: 6.05, uniqueContacts: 1,
        averageConversion: 6.05, averageUniqueConversion: 6.05,
        refundsNumber: 0, refundsAmountWoTax: 0, refundsAmountWTax: 0,
        grossConversionsNumber: 1, grossConversionsAmountWoTax: 5, grossConversionsAmountWTax: 6.05,
        firstConversionAt: '2024-03-12T15:00:00.000Z', lastConversionAt: '2024-03-12T15:00:00.000Z', sourceStartedAt: '2024-02-02T00:00:00.000Z',
      },
      // only o10's refund in the period: no conversion, no contact, no first or last conversion
      'automation:k3': {
        conversionsNumber: 0, conversionsAmountWoTax: 0, conversionsAmountWTax: 0, uniqueContacts: 0,
        averageConversion: 0, averageUniqueConversion: 0,
        refundsNumber: 1, refundsAmountWoTax: -80, refundsAmountWTax: -96.8,
        grossConversionsNumber: 1, grossConversionsAmountWoTax: -80, grossConversionsAmountWTax: -96.8,
        firstConversionAt: null, lastConversionAt: null, sourceStartedAt: '2024-02-03T00:00:00.000Z',
      },
      // o12 (c6): the same source id as campaign k2, another source
      'automation:k2': {
        conversionsNumber: 1, conversionsAmountWoTax: 15, conversionsAmountWTax: 18.15, uniqueContacts: 1,
        averageConversion: 18.15, averageUniqueConversion: 18.15,
        refundsNumber: 0, refundsAmountWoTax: 0, refundsAmountWTax: 0,
        grossConversionsNumber: 1, grossConversionsAmountWoTax: 15, grossConversionsAmountWTax: 18.15,
        firstConversionAt: '2024-03-12T12:00:00.000Z', lastConversionAt: '2024-03-12T12:00:00.000Z', sourceStartedAt: '2024-02-05T00:00:00.000Z',
      },
    });
  });

  it('periods starting on each day: unique contacts, averages, first and last conversion', async () => {
    // k1's unique contacts by hand: c1 converts on 03-09, 03-10, 03-12, 03-14; c2 on 03-11 and 03-13
    // (twice); c3 on 03-01; refunds never count.
    const expected: [Period, Record<string, number>][] = [
      [['2024-03-09', '2024-03-14'], { 'campaign:k1': 2, 'automation:k2': 1, 'campaign:k2': 1, 'automation:k3': 0 }],
      [['2024-03-10', '2024-03-14'], { 'campaign:k1': 2, 'automation:k2': 1, 'campaign:k2': 1, 'automation:k3': 0 }],
      [['2024-03-11', '2024-03-14'], { 'campaign:k1': 2, 'automation:k2': 1, 'campaign:k2': 1, 'automation:k3': 0 }],
      [['2024-03-12', '2024-03-14'], { 'campaign:k1': 2, 'automation:k2': 1, 'campaign:k2': 1, 'automation:k3': 0 }],
      [['2024-03-13', '2024-03-14'], { 'campaign:k1': 2, 'automation:k3': 0 }],
      [['2024-03-14', '2024-03-14'], { 'campaign:k1': 1 }],
      [['2024-03-11', '2024-03-11'], { 'campaign:k1': 1 }],
      [['2024-03-01', '2024-03-19'], { 'campaign:k1': 3, 'automation:k3': 1, 'automation:k2': 1, 'campaign:k2': 1 }],
    ];
    const reports: Row[][] = [];
    for (let i = 0; i < expected.length; i += 2) reports.push(...(await Promise.all(expected.slice(i, i + 2).map(([period]) => report(period)))));
    for (const [i, [period, contacts]] of expected.entries()) {
      expect(Object.fromEntries(reports[i]!.map((r) => [key(r), r.uniqueContacts])), period.join('..')).toEqual(contacts);
    }
    // 03-14 alone: o5 (c1) and o6's refund (c2), which does not make c2 a contact.
    expect(pick(reports[5]!, ['averageUniqueConversion', 'firstConversionAt', 'lastConversionAt', 'refundsNumber'])).toEqual({
      'campaign:k1': { averageUniqueConversion: 36.3, firstConversionAt: '2024-03-14T10:00:00.000Z', lastConversionAt: '2024-03-14T10:00:00.000Z', refundsNumber: 1 },
    });
    // 03-01..03-19: c3's o9 is the first conversion; c1, c2, c3 are k1's contacts.
    expect(pick(reports[7]!, ['firstConversionAt', 'lastConversionAt', 'conversionsNumber', 'averageUniqueConversion'])['campaign:k1']).toEqual({
      firstConversionAt: '2024-03-01T10:00:00.000Z',
      lastConversionAt: '2024-03-14T10:00:00.000Z',
      conversionsNumber: 8,
      averageUniqueConversion: 116.97, // (12.1 + 12.1 + 24.2 + 36.3 + 48.4 + 60.5 + 72.6 + 84.7) / 3 = 350.9 / 3
    });
    // Items of a period equal too, and a report filtered by country (the transactions' way).
    await Promise.all([
      same(['items', ...flags(['2024-03-11', '2024-03-14']), '--all', '-o', 'jsonl'], dir, file),
      same(['report', ...flags(['2024-03-11', '2024-03-14']), '-o', 'json', '--country', 'CZ'], dir, file),
    ]);
  });

  it('a period with a transaction without an exchange rate is the same error from both', async () => {
    for (const period of [['2024-03-01', '2024-03-31'], ['2024-03-20', '2024-03-20']] as Period[]) {
      const run = await same(['report', ...flags(period), '-o', 'json'], dir, file, 2);
      expect(run.stderr).toMatch(/cannot convert to EUR: exchange rates are missing\n\s+CZK: fx has no rate of CZK to EUR at all; 1 transaction on 2024-03-20 needs one\n/);
    }
    await same(['items', ...flags(['2024-03-15', '2024-03-25']), '-o', 'json', '--country', 'CZ'], dir, file, 2);
    // The day before it is fine.
    expect((await report(['2024-03-19', '2024-03-19']))).toEqual([]);
  });
});

describe('data import: failures leave nothing half-written', () => {
  const good = () =>
    shop({ orders: [{ id: 'o1', at: '2024-03-02T10:00:00Z' }], touches: [{ at: '2024-03-01T10:00:00Z' }] });
  const leftovers = (dir: string) => readdirSync(dir).filter((f) => f.includes('.tmp-') || f.includes('old-')).sort();

  it('an existing --into is kept without --force, replaced with it', async () => {
    const out = join(root, 'force');
    mkdirSync(out);
    const file = join(out, 'data.duckdb');
    copyFileSync(await samplesImported(), file);
    const before = readFileSync(file);
    const again = await cli(['data', 'import', good(), '--into', file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/data\.duckdb exists; choose another --into or pass --force to replace it/);
    expect(readFileSync(file).equals(before)).toBe(true);
    // A failing import with --force keeps the old file too.
    const bad = dataset({ 'orders.csv': csv(ORDER_HEADER, [['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', 'abc', '1', '', '', '']]), 'touches.csv': 'contact_id,datetime,touch,source_type,source_id\n' });
    expect((await cli(['data', 'import', bad, '--into', file, '--force'])).code).toBe(2);
    expect(readFileSync(file).equals(before)).toBe(true);
    const replaced = good();
    await importInto(replaced, file, '--force');
    expect(leftovers(out)).toEqual([]);
    const check = JSON.parse((await cli(['data', 'check', file, '-o', 'json'])).stdout) as { tables: { table: string; rows: number }[] };
    expect(check.tables.map((t) => [t.table, t.rows])).toEqual([['orders', 1], ['touches', 1]]);
  });

  it('a bad value fails the import naming the line; no file and no temporary file remain', async () => {
    const out = join(root, 'bad');
    mkdirSync(out);
    const dir = dataset({
      'orders.csv': csv(ORDER_HEADER, [
        ['o1', 'c1', '2024-03-02T10:00:00Z', 'EUR', '1', '1', '', '', ''],
        ['o2', 'c1', '2024-03-03T10:00:00Z', 'EUR', 'abc', '1', '', '', ''],
      ]),
      'touches.csv': 'contact_id,datetime,touch,source_type,source_id\nc1,2024-03-01T00:00:00Z,click,campaign,k1\n',
    });
    const run = await cli(['data', 'import', dir, '--into', join(out, 'x.duckdb')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/line 3, column amount_wo_tax: "abc" is not a decimal number/);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(out)).toEqual([]);
    // Failing while attributing (no reference currency to tell): the same.
    const currencies = shop({ orders: [{ id: 'o1', at: '2024-03-02T10:00:00Z' }, { id: 'o2', at: '2024-03-02T11:00:00Z', currency: 'CZK' }], touches: [{ at: '2024-03-01T10:00:00Z' }] });
    const unattributed = await cli(['data', 'import', currencies, '--into', join(out, 'x.duckdb')]);
    expect(unattributed.code).toBe(2);
    expect(unattributed.stderr).toMatch(/cannot tell the reference currency: .*pass --reference-currency/);
    expect(readdirSync(out)).toEqual([]);
    // Nowhere to write: said before any work, naming the folder (not DuckDB's "IO Error" once the data is read).
    const nowhere = await cli(['data', 'import', good(), '--into', join(out, 'missing', 'x.duckdb')]);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toBe(
      `convx: error: --into ${join(out, 'missing', 'x.duckdb')}: the folder ${join(out, 'missing')} does not exist\n` +
        `hint: create it first (mkdir -p ${join(out, 'missing')}), or choose another --into\n`,
    );
    expect(readdirSync(out)).toEqual([]);
    // A folder that is a file: the same.
    writeFileSync(join(out, 'plain'), '');
    const notFolder = await cli(['data', 'import', good(), '--into', join(out, 'plain', 'x.duckdb')]);
    expect(notFolder.code).toBe(2);
    expect(notFolder.stderr).toBe(`convx: error: --into ${join(out, 'plain', 'x.duckdb')}: ${join(out, 'plain')} is not a folder\n`);
    expect(readdirSync(out)).toEqual(['plain']);
  });

  it('refuses a file name that does not end in .duckdb, with the reason, before any work (an existing file too, with --force)', async () => {
    const out = join(root, 'names');
    mkdirSync(out);
    for (const [name, suggested] of [['shop.db', 'shop.duckdb'], ['shop', 'shop.duckdb'], ['orders.csv', 'orders.duckdb']]) {
      const run = await cli(['data', 'import', SAMPLES, '--into', join(out, name!)]);
      expect(run.code, name).toBe(2);
      expect(run.stderr).toBe(
        `convx: error: --into ${join(out, name!)}: the file name must end in .duckdb (convx writes a DuckDB database file, and its name says so to whoever passes it to --data)\n` +
          `hint: give a name such as ${join(out, suggested!)}\n`,
      );
      expect(readdirSync(out)).toEqual([]);
    }
    // a missing folder is not the first thing said of a name that would be refused anyway
    expect((await cli(['data', 'import', SAMPLES, '--into', join(out, 'missing', 'shop.db')])).stderr).toMatch(/must end in \.duckdb/);
    writeFileSync(join(out, 'kept.db'), 'mine');
    const forced = await cli(['data', 'import', SAMPLES, '--into', join(out, 'kept.db'), '--force']);
    expect(forced.code).toBe(2);
    expect(forced.stderr).toMatch(/kept\.db: the file name must end in \.duckdb/);
    expect(readFileSync(join(out, 'kept.db'), 'utf8')).toBe('mine');
    expect(readdirSync(out)).toEqual(['kept.db']);
  });

  it('removes the staging file a killed import left behind (an earlier process of this id too), and an old file it had still to remove, not those of an import still running', async () => {
    const out = join(root, 'abandoned');
    mkdirSync(out);
    const file = join(out, 'data.duckdb');
    // A process that has ended: its pid names a staging file nobody will finish.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    writeFileSync(`${file}.tmp-${dead}-0123abcd`, 'half');
    writeFileSync(`${file}.tmp-${dead}-0123abcd.wal`, 'half');
    writeFileSync(`${file}.convx-old-${dead}-0123abcd-1`, 'replaced');
    // The same, named as a convx before the names' token did.
    writeFileSync(`${file}.tmp-${dead}`, 'half');
    writeFileSync(`${file}.tmp-${dead}.wal`, 'half');
    writeFileSync(`${file}.convx-old-${dead}-1`, 'replaced');
    // An earlier process of this one's id (in a container every run is pid 1): another token, or none, so not this one's.
    writeFileSync(`${file}.tmp-${process.pid}-fedcba98`, 'half');
    writeFileSync(`${file}.tmp-${process.pid}`, 'half');
    writeFileSync(`${file}.convx-old-${process.pid}-fedcba98-2`, 'replaced');
    // pid 1 is alive (and not this process): its import may still be writing, or removing the file it replaced.
    writeFileSync(`${file}.tmp-1-0123abcd`, 'busy');
    writeFileSync(`${file}.convx-old-1-0123abcd-3`, 'busy');
    writeFileSync(`${file}.tmp-1`, 'busy');
    writeFileSync(`${file}.convx-old-1-3`, 'busy');
    // Not convx's: a user's backups (a number no process has), and a folder.
    writeFileSync(`${file}.old-20240301`, 'mine');
    writeFileSync(`${file}.tmp-20240301`, 'mine');
    mkdirSync(`${file}.tmp-${Number(dead) + 1}`);
    await importInto(good(), file);
    expect(leftovers(out)).toEqual(
      ['data.duckdb.convx-old-1-0123abcd-3', 'data.duckdb.convx-old-1-3', 'data.duckdb.old-20240301', 'data.duckdb.tmp-1', 'data.duckdb.tmp-1-0123abcd', 'data.duckdb.tmp-20240301', `data.duckdb.tmp-${Number(dead) + 1}`].sort(),
    );
  });

  /** A folder this process cannot write: a read-only one as a user; as root (CI), who writes anywhere else, /proc/sys. */
  function unwritable(): string | undefined {
    const dir = join(root, 'read-only');
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o555);
    for (const folder of [dir, '/proc/sys']) {
      try {
        accessSync(folder, constants.W_OK);
      } catch {
        return folder;
      }
    }
    return undefined;
  }

  it('refuses an --into in a folder it cannot write before reading anything, with --split-plugins and --append too', async () => {
    const folder = unwritable();
    // Linux always has one (/proc/sys refuses even root); elsewhere, as root, there may be none to try.
    if (!folder) return expect(process.platform).not.toBe('linux');
    const single = await cli(['data', 'import', SAMPLES, '--into', join(folder, 'shop.duckdb')]);
    expect(single.code, single.stderr).toBe(2);
    expect(single.stderr).toMatch(/--into .*shop\.duckdb: cannot write into .* \((no permission to write there|a read-only file system)\)/);
    expect(single.stderr).not.toMatch(/unexpected error/);
    const split = await cli(['data', 'import', SAMPLES, '--split-plugins', '--into', join(folder, 'plugins')]);
    expect(split.code, split.stderr).toBe(2);
    expect(split.stderr).toMatch(/cannot write into/);
    if (folder !== '/proc/sys') {
      // An imported file in a folder made read-only afterwards: --append writes its copy beside it.
      chmodSync(folder, 0o755);
      const file = join(folder, 'shop.duckdb');
      await importInto(good(), file);
      chmodSync(folder, 0o555);
      const append = await cli(['data', 'import', SAMPLES, '--into', file, '--append']);
      expect(append.code, append.stderr).toBe(2);
      expect(append.stderr).toMatch(/cannot write into/);
    }
  });

  it('writes through a symbolic --into: the link stays, the file it points to is replaced; a link to nothing is refused', async () => {
    const out = join(root, 'linked');
    mkdirSync(join(out, 'real'), { recursive: true });
    const real = join(out, 'real', 'shop.duckdb');
    await importInto(good(), real);
    const link = join(out, 'current.duckdb');
    symlinkSync(real, link);
    const before = statSync(real).ino;
    const run = await cli(['data', 'import', SAMPLES, '--into', link, '--force']);
    expect(run.code, run.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(statSync(real).ino).not.toBe(before);
    // The file it points to holds the samples now.
    const report = await cli(['report', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json', '--data', real]);
    expect(report.code, report.stderr).toBe(0);
    expect(JSON.parse(report.stdout).conversions.length).toBeGreaterThan(3);
    // A link named .duckdb to a file named otherwise: the name given is the one checked.
    const versioned = join(out, 'real', 'shop-v3.db');
    copyFileSync(real, versioned);
    const current = join(out, 'v3.duckdb');
    symlinkSync(versioned, current);
    const through = await cli(['data', 'import', SAMPLES, '--into', current, '--force']);
    expect(through.code, through.stderr).toBe(0);
    expect(lstatSync(current).isSymbolicLink()).toBe(true);
    // A loop of links.
    symlinkSync(join(out, 'loop-b.duckdb'), join(out, 'loop-a.duckdb'));
    symlinkSync(join(out, 'loop-a.duckdb'), join(out, 'loop-b.duckdb'));
    const loop = await cli(['data', 'import', SAMPLES, '--into', join(out, 'loop-a.duckdb'), '--force']);
    expect(loop.code).toBe(2);
    expect(loop.stderr).toMatch(/loop-a\.duckdb is a symbolic link to itself, through a loop of links/);
    const dangling = join(out, 'nothing.duckdb');
    symlinkSync(join(out, 'real', 'gone.duckdb'), dangling);
    const refused = await cli(['data', 'import', SAMPLES, '--into', dangling]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/nothing\.duckdb is a symbolic link to a file that does not exist/);
    expect(existsSync(join(out, 'real', 'gone.duckdb'))).toBe(false);
  });

  it('--into is required and must not be a directory', async () => {
    const missing = await cli(['data', 'import', SAMPLES]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--into <file> is required/);
    const directory = await cli(['data', 'import', SAMPLES, '--into', root]);
    expect(directory.code).toBe(2);
    expect(directory.stderr).toMatch(/is a directory/);
  });

  it('--data on a DuckDB file convx did not write, or wrote in another format, says to import', async () => {
    const foreign = join(root, 'foreign.duckdb');
    const instance = await DuckDBInstance.create(foreign);
    const connection = await instance.connect();
    await connection.run('CREATE TABLE orders AS SELECT 1 AS order_id');
    connection.closeSync();
    instance.closeSync();
    for (const argv of [['report', '--data', foreign], ['data', 'check', foreign], ['items', '--data', foreign, '--from', '2024-01-01', '--to', '2024-01-31']]) {
      const run = await cli(argv);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/foreign\.duckdb is a DuckDB database, but not a dataset written by `convx data import`/);
      expect(run.stderr).toMatch(/write one with: convx data import DIR --into dataset\.duckdb/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    // A file of another format version.
    const old = join(root, 'old.duckdb');
    copyFileSync(await importInto(good(), 'for-old.duckdb'), old);
    const db = await DuckDBInstance.create(old);
    const c = await db.connect();
    await c.run(`UPDATE convx_dataset SET value = '99' WHERE key = 'version'`);
    c.closeSync();
    db.closeSync();
    const run = await cli(['report', '--data', old]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/in dataset format 99; this convx reads format \d+/);
    expect(run.stderr).toMatch(/import the dataset again: convx data import .* --into .*old\.duckdb --force/);
  });

  it('refuses a file whose attributed transactions lack a column a query parameter filters on (imported before the filter was added)', async () => {
    const stale = join(root, 'stale.duckdb');
    copyFileSync(await importInto(good(), 'for-stale.duckdb'), stale);
    const db = await DuckDBInstance.create(stale);
    const c = await db.connect();
    const schemas = (await c.runAndReadAll(`SELECT DISTINCT schema_name FROM duckdb_columns() WHERE table_name = 'conv'`)).getRowObjects();
    expect(schemas.length).toBeGreaterThan(0);
    for (const { schema_name } of schemas) {
      // (its index depends on the table: dropped first, as a file written without the column would not have it either)
      await c.run(`DROP INDEX IF EXISTS "${String(schema_name)}".conv_order_id`);
      await c.run(`ALTER TABLE "${String(schema_name)}".conv DROP COLUMN delivery_id`);
    }
    c.closeSync();
    db.closeSync();
    // every command, whether or not it filters: the file no longer has what this convx expects
    for (const argv of [['report'], ['items', '--from', '2024-01-01', '--to', '2024-12-31', '--delivery', 'd-1']]) {
      const run = await cli([...argv, '--data', stale]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/stale\.duckdb was written by convx \S+ without delivery_id, which this convx filters on/);
      expect(run.stderr).toMatch(/import the dataset again: convx data import .* --into .*stale\.duckdb --force/);
    }
  });
});

describe('data check of an imported file', () => {
  it('lists the tables and row counts of the directory and keeps the findings from the files', async () => {
    const dir = shop({
      orders: [
        { id: 'o1', at: '2024-03-02T10:00:00Z' },
        { id: 'o-neg', at: '2024-03-03T10:00:00Z', net: -10, gross: -12 },
        { id: 'o1', at: '2024-03-04T10:00:00Z' },
      ],
      touches: [{ at: '2024-03-01T10:00:00Z' }, { at: '2024-03-01T11:00:00Z', source: 'k-unknown' }],
      sources: [['campaign', 'k1', 'One', '', '', '', '', '', '']],
    });
    const file = await importInto(dir, 'check.duckdb');
    const [a, b] = await Promise.all([cli(['data', 'check', dir, '-o', 'json']), cli(['data', 'check', file, '-o', 'json'])]);
    expect(b.code).toBe(a.code);
    expect(a.code).toBe(1);
    const [fromDir, fromFile] = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
    expect(fromFile.dataset).toBe(file);
    expect({ ...fromFile, dataset: dir }).toEqual(fromDir);
    expect(fromFile.tables.map((t: { table: string; rows: number }) => [t.table, t.rows])).toEqual([['orders', 3], ['touches', 2], ['sources', 1]]);
    const codes = fromFile.findings.map((f: { code: string }) => f.code);
    expect(codes).toEqual(expect.arrayContaining(['negative_amount', 'duplicate_order', 'unknown_source']));
    expect(JSON.stringify(fromFile.findings.find((f: { code: string }) => f.code === 'negative_amount'))).toMatch(/line 3/);
    // The text output, and the warning a report prints, are the same.
    const text = await same(['report', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'], dir, file);
    expect(text.stderr).toMatch(/negative amount/);
    const [ta, tb] = await Promise.all([cli(['data', 'check', dir]), cli(['data', 'check', file])]);
    expect(tb.stdout.replaceAll(file, '<data>')).toBe(ta.stdout.replaceAll(dir, '<data>'));
  });
});

describe('a validation-only dataset (contacts and assets, no orders)', () => {
  it('imports, and convx validate answers from the file as from the directory', async () => {
    const dir = dataset({
      'contacts.csv': readFileSync(join(SAMPLES, 'contacts.csv')),
      'assets.csv': readFileSync(join(SAMPLES, 'assets.csv')),
    });
    const file = await importInto(dir, 'validation.duckdb');
    // Every sample request in one run (one open of each side): each one's result, and the same
    // "not ready" lines on stderr and exit code from both.
    const requests = readdirSync(DELIVERIES).sort();
    const run = await same(['validate', ...requests.map((r) => join(DELIVERIES, r)), '-o', 'json'], dir, file, 1);
    const results = JSON.parse(run.stdout) as { file: string; result: { audience?: unknown } }[];
    expect(results.map((r) => r.file)).toEqual(requests.map((r) => join(DELIVERIES, r)));
    for (const { file: request, result } of results) expect(result.audience, request).toBeDefined();
    expect(run.stderr.match(/^convx: not ready: /gm)?.length).toBeGreaterThanOrEqual(4);
    // It cannot report, and says why.
    const report = await cli(['report', '--data', file]);
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(/has no orders table \(its source had none when it was imported\)/);
  });
});

describe('serving the imported file', () => {
  const SECRET = 'test-secret-that-is-long-enough';
  const NOW = new Date('2024-05-01T12:00:00Z');
  const apps: { app: FastifyInstance; served: ServedDataset }[] = [];
  async function appFor(path: string) {
    const served = await ServedDataset.load(path, { poolSize: 2 });
    const app = await buildApp({
      dataset: () => served,
      verify: createVerifier({ secret: SECRET }),
      log: () => undefined,
      now: () => NOW,
      version: 'test',
      limits: { rateLimitPerMinute: 0 },
    });
    apps.push({ app, served });
    return app;
  }
  afterAll(async () => {
    for (const { app, served } of apps) {
      await app.close();
      await served.retire();
    }
  });

  it('answers /v1/conversions and /v1/conversions/items with the bodies it gives from the directory', async () => {
    const file = await samplesImported();
    const [fromDir, fromFile] = await Promise.all([appFor(SAMPLES), appFor(file)]);
    const headers = { authorization: `Bearer ${await signDevelopmentToken(SECRET, 'shop', '1h')}` };
    const period = 'dateFrom=2024-01-01&dateTo=2024-04-30';
    const items = JSON.parse((await fromDir.inject({ method: 'GET', url: `/v1/conversions/items?${period}&limit=1000`, headers })).body) as {
      conversions: ConversionRecord[];
    };
    const refunded = items.conversions.find((r) => r.isRefund)!;
    const urls = [
      '/v1/conversions',
      `/v1/conversions?${period}`,
      `/v1/conversions?${period}&q=welcome&sort=name`,
      `/v1/conversions?${period}&country=CZ,SK&currency=EUR,CZK`,
      `/v1/conversions?${period}&limit=3&offset=2&sort=-uniqueContacts,firstConversionAt`,
      '/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-01',
      '/v1/conversions?dateFrom=2023-01-01&dateTo=2023-06-30',
      `/v1/conversions/items?${period}`,
      `/v1/conversions/items?${period}&orderId=${refunded.orderId}`,
      `/v1/conversions/items?dateFrom=1900-01-01&dateTo=9999-12-31&orderId=${refunded.orderId}`,
      `/v1/conversions/items?${period}&orderId=no-such-order`,
      `/v1/conversions/items?${period}&contactId=${refunded.contactId}&sort=-datetime`,
      `/v1/conversions/items?${period}&sourceId=${refunded.source.id}&limit=5&offset=5`,
      `/v1/conversions?dateFrom=2024-03-01&dateTo=2024-02-01`,
    ];
    let withRows = 0;
    for (const url of urls) {
      const [a, b] = await Promise.all([fromDir.inject({ method: 'GET', url, headers }), fromFile.inject({ method: 'GET', url, headers })]);
      expect(b.statusCode, url).toBe(a.statusCode);
      expect(anyVersion(b.body), url).toBe(anyVersion(a.body));
      if (a.statusCode === 200 && JSON.parse(a.body).conversions.length > 0) withRows++;
    }
    expect(withRows).toBeGreaterThanOrEqual(10);
    const order = JSON.parse((await fromFile.inject({ method: 'GET', url: urls[8]!, headers })).body) as { conversions: ConversionRecord[] };
    expect(order.conversions.map((r) => [r.orderId, r.isRefund]).sort()).toEqual([
      [refunded.orderId, false],
      [refunded.orderId, true],
    ]);
  });
});
