/**
 * An empty result explains itself on stderr (period, filters, the dates the
 * data holds, a command that finds something) while stdout stays what the format prints for no rows;
 * `data check` prints each table's date range. (The progress line: progress-line.test.ts.)
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ITEM_COLUMNS, REPORT_COLUMNS } from '../src/output/columns.js';
import { unknownIds } from '../src/commands/shared.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, csv, dataset, SAMPLES, shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

/** Far after the samples (January to May 2024): the default period holds nothing. */
const NOW = '2026-11-23T12:00:00Z';
/** The empty document, whose paging names the version of the data (a hash of its files). */
const EMPTY_JSON = /^\{\n {2}"conversions": \[\],\n {2}"paging": \{\n {4}"start": 0,\n {4}"count": 0,\n {4}"totalCount": 0,\n {4}"dataVersion": "[\w-]{22}"\n {2}\}\n\}\n$/;
/** What samples/shop holds (data check prints the instants, the hint their days). */
const SAMPLE_RANGES = 'the dataset holds orders from 2024-01-01 to 2024-05-14 and touches from 2023-11-27 to 2024-04-30 (UTC)';

/** The command after "try: " or "without the filters: " in a hint (after "; " too), as argv (its words are plain or single-quoted). */
function suggested(stderr: string, label: string): string[] {
  const line = stderr.split('\n').find((l) => l.trimStart().startsWith(`${label}: convx `) || l.includes(`; ${label}: convx `));
  expect(line, stderr).toBeDefined();
  const words = line!.slice(line!.indexOf(`${label}: convx `) + label.length + 2).match(/'[^']*'|\S+/g)!;
  return words.slice(1).map((w) => (w.startsWith("'") ? w.slice(1, -1) : w));
}

/** samples/shop opened once and lent to the commands after the first test's, which opens it afresh (kept-backends.ts). */
const kept = keptBackends();

describe('an empty result explains itself', () => {
  it('report without dates: stdout is the empty document, stderr the period, the data range and a command that finds rows', async () => {
    const run = await cli(['report', '--data', SAMPLES, '-o', 'json'], { now: NOW });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(EMPTY_JSON);
    expect(run.stderr).toContain('No sources in 2026-10-25..2026-11-23 (no --from/--to: the 30 days ending today, UTC).');
    expect(run.stderr).toContain(SAMPLE_RANGES);
    const argv = suggested(run.stderr, 'try');
    expect(argv).toEqual(['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-05-31']);
    const tried = await kept([...argv, '-o', 'json'], { now: NOW });
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
      const run = await kept(['report', '--data', SAMPLES, '-o', format], { now: NOW });
      expect(run.stdout, format).toBe(stdout);
      expect(run.stderr, format).toContain(SAMPLE_RANGES);
    }
    const all = await kept(['report', '--data', SAMPLES, '--all', '-o', 'json'], { now: NOW });
    expect(all.stdout).toMatch(EMPTY_JSON);
    expect(all.stderr).toContain('try: convx report');
  });

  it('--quiet leaves the hint out (and the stdout as it is)', async () => {
    const run = await kept(['report', '--data', SAMPLES, '-o', 'json', '--quiet'], { now: NOW });
    expect(run.stdout).toMatch(EMPTY_JSON);
    expect(run.stderr).toBe('');
  });

  it('names the filters as flags, and suggests the same period without them when the period holds data', async () => {
    const run = await kept(['items', '--data', SAMPLES, '--from', '2024-02-01', '--to', '2024-02-29', '--contact', 'no one', '--country', 'CZ', '-o', 'csv']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${ITEM_COLUMNS.join(',')}\n`);
    expect(run.stderr).toContain('No conversions in 2024-02-01..2024-02-29.');
    expect(run.stderr).toContain("filters: --contact 'no one' --country CZ");
    const argv = suggested(run.stderr, 'without the filters');
    expect(argv).toEqual(['items', '--data', SAMPLES, '--from', '2024-02-01', '--to', '2024-02-29']);
    expect((await kept([...argv, '-o', 'jsonl'])).stdout.trim().split('\n').length).toBeGreaterThan(10);
  });

  it('says which id of a filter the data holds nowhere, with the nearest ids; an id it holds, or an id of no filter, has no such line', async () => {
    const hint = async (...filters: string[]) => {
      const run = await kept(['items', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-12-31', ...filters, '-o', 'csv']);
      expect(run.code, run.stderr).toBe(0);
      return run.stderr.split('\n').filter((line) => / in the dataset; /.test(line));
    };
    // a typo of k-1: its nearest ids; a word like none: the first few ids
    expect(await hint('--source', 'k-1x')).toEqual(['  no source k-1x in the dataset; did you mean k-1, a-1, k-2?']);
    expect(await hint('--source', 'nope')).toEqual([expect.stringMatching(/^ {2}no source nope in the dataset; known source ids: (?:[ak]-\d, ){7}[ak]-\d$/)]);
    // a source of another type: what it is
    expect(await hint('--source-type', 'automation', '--source', 'k-1')).toEqual(['  no automation k-1 in the dataset; it is campaign:k-1']);
    // every unknown id, the source's and the smartflow's
    expect(await hint('--source', 'k-1x', '--smartflow', 'sf-nope')).toEqual([
      '  no source k-1x in the dataset; did you mean k-1, a-1, k-2?',
      expect.stringMatching(/^ {2}no smartflow sf-nope in the dataset; /),
    ]);
    // a delivery of another smartflow than the one asked, and of an unknown smartflow (the smartflow's line alone)
    expect(await hint('--smartflow', 'sf-1', '--delivery', 'd-3')).toEqual(['  no delivery d-3 of smartflow sf-1 in the dataset; it is a delivery of smartflow sf-2']);
    expect(await hint('--smartflow', 'sf-x', '--delivery', 'd-1')).toEqual([expect.stringMatching(/^ {2}no smartflow sf-x in the dataset; did you mean sf-1/)]);
    // a smartflow's id given as a smartflow node's
    expect(await hint('--source-type', 'smartflow', '--source', 'sf-1')).toEqual(['  no smartflow node sf-1 in the dataset; sf-1 is a smartflow: --smartflow sf-1']);
    // a known source with no conversion in a period of none, and a filter that is no id: no line
    const known = await kept(['items', '--data', SAMPLES, '--from', '2023-01-01', '--to', '2023-01-31', '--source', 'k-1', '-o', 'csv']);
    expect(known.stderr).toContain('No conversions in 2023-01-01..2023-01-31.');
    expect(known.stderr).not.toContain(' in the dataset; ');
    expect(await hint('--country', 'XX')).toEqual([]);
  });

  it('keeps the filters and moves the period onto the data when the period is outside it', async () => {
    const run = await kept(['items', '--data', SAMPLES, '--from', '2025-01-01', '--to', '2025-01-31', '--source', 'k-1', '--all', '-o', 'jsonl']);
    expect(run.stdout).toBe('');
    const argv = suggested(run.stderr, 'try');
    expect(argv).toEqual(['items', '--data', SAMPLES, '--source', 'k-1', '--from', '2024-01-01', '--to', '2024-05-31']);
    const records = (await kept([...argv, '-o', 'jsonl', '--all'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
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

  it("drill of a known source without conversions in the period says the source has none, not that no order is attributed", async () => {
    // samples/shop: automation a-2 has no conversion in March 2024, which holds 85 conversions of other sources
    const run = await kept(['drill', 'automation:a-2', '--data', SAMPLES, '--month', '2024-03', '-o', 'csv']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${ITEM_COLUMNS.join(',')}\n`);
    expect(run.stderr).toContain('No conversions in 2024-03-01..2024-03-31 (--month 2024-03).\n  source: automation:a-2\n');
    expect(run.stderr).toContain('  this source has no conversions in the period; the sources with conversions in it: convx report');
    expect(run.stderr).not.toContain('no order in this period is attributed');
    const argv = suggested(run.stderr, 'the sources with conversions in it');
    expect(argv).toEqual(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31']);
    const report = JSON.parse((await kept([...argv, '--all', '-o', 'json'])).stdout);
    expect(report.conversions.length).toBeGreaterThan(0);
    expect(report.conversions.map((r: { source: { id: string } }) => r.source.id)).not.toContain('a-2');
    // with a filter of its own, the filter is what to leave out, the source stays
    const filtered = await kept(['drill', 'automation:a-2', '--data', SAMPLES, '--month', '2024-03', '--country', 'CZ', '-o', 'csv']);
    expect(filtered.stderr).toContain('  source: automation:a-2\n  filters: --country CZ\n');
    expect(suggested(filtered.stderr, 'without the filters')).toEqual(['drill', 'automation:a-2', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31']);
  });

  it("drill of a detailUrl that carries its dates says no default period chose them; a lone dateFrom is named as what the 30 days run from", async () => {
    const dir = shop({ orders: [{ id: 'o1', at: '2024-03-02T10:00:00Z' }], touches: [{ at: '2024-03-01T00:00:00Z' }] });
    const url = '/v1/campaigns/k1/conversions?sourceType=campaign&sourceId=k1';
    const both = await cli(['drill', `${url}&dateFrom=2023-01-01&dateTo=2023-01-31`, '--data', dir, '-o', 'csv'], { now: NOW });
    expect(both.code, both.stderr).toBe(0);
    expect(both.stderr).toContain('No conversions in 2023-01-01..2023-01-31.\n');
    const from = await cli(['drill', `${url}&dateFrom=2023-01-01`, '--data', dir, '-o', 'csv'], { now: NOW });
    expect(from.stderr).toContain("No conversions in 2023-01-01..2023-01-30 (no --to: the 30 days from the detailUrl's dateFrom).\n");
    const to = await cli(['drill', `${url}&dateTo=2023-01-30`, '--data', dir, '-o', 'csv'], { now: NOW });
    expect(to.stderr).toContain("No conversions in 2023-01-01..2023-01-30 (no --from: the 30 days ending the detailUrl's dateTo).\n");
    // A flag beside the URL's other bound: both given, no note.
    const mixed = await cli(['drill', `${url}&dateTo=2023-01-30`, '--from', '2023-01-02', '--data', dir, '-o', 'csv'], { now: NOW });
    expect(mixed.stderr).toContain('No conversions in 2023-01-02..2023-01-30.\n');
    // Without dates in the URL or flags, the default period is today's, and said so.
    const none = await cli(['drill', url, '--data', dir, '-o', 'csv'], { now: NOW });
    expect(none.stderr).toContain('No conversions in 2026-10-25..2026-11-23 (no --from/--to: the 30 days ending today, UTC).\n');
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

    it('drill of a known source without conversions in the period explains it as local mode does', async () => {
      const api = `${server.url}/v1`;
      const argv = ['drill', 'automation:a-2', '--month', '2024-03', '-o', 'csv'];
      const [local, remote] = await Promise.all([kept([...argv, '--data', SAMPLES]), cli([...argv, '--api', api], { env: { CONVX_TOKEN: token } })]);
      expect(remote.code, remote.stderr).toBe(0);
      expect(remote.stdout).toBe(local.stdout);
      expect(remote.stderr).toContain('  source: automation:a-2\n');
      expect(remote.stderr).toContain(`  this source has no conversions in the period; the sources with conversions in it: convx report --api ${api} --from 2024-03-01 --to 2024-03-31\n`);
      expect(remote.stderr).not.toContain('no order in this period is attributed');
    });
  });
});

describe("unknownIds: the check of drill's target and of an empty result's filter ids", () => {
  const sources = [
    { type: 'campaign', id: 'k-1', campaignId: 'k-1', smartflowId: null, deliveryId: null },
    { type: 'smartflow', id: 'n-1', campaignId: null, smartflowId: 'sf-1', deliveryId: 'd-1' },
    { type: 'smartflow', id: 'n-2', campaignId: null, smartflowId: 'sf-2', deliveryId: 'd-2' },
  ];
  it('names each unknown id once, what it is where it is something else, and asks a delivery of the smartflow given', () => {
    expect(unknownIds({ sourceId: 'k-1' }, sources)).toEqual([]);
    expect(unknownIds({ sourceType: 'automation', sourceId: 'k-1' }, sources)).toMatchObject([{ key: 'sourceId', what: 'no automation k-1', other: ['campaign:k-1'] }]);
    expect(unknownIds({ smartflowId: 'sf-1', deliveryId: 'd-1' }, sources)).toEqual([]);
    // a delivery of another smartflow than the one given
    expect(unknownIds({ smartflowId: 'sf-1', deliveryId: 'd-2' }, sources)).toMatchObject([{ key: 'deliveryId', what: 'no delivery d-2 of smartflow sf-1', other: ['a delivery of smartflow sf-2'] }]);
    // of an unknown smartflow: the smartflow alone; a delivery nowhere: the nearest
    expect(unknownIds({ smartflowId: 'sf-9', deliveryId: 'd-1' }, sources).map((u) => u.key)).toEqual(['smartflowId']);
    expect(unknownIds({ deliveryId: 'd-3' }, sources)).toMatchObject([{ what: 'no delivery d-3', other: [], hint: 'did you mean d-1, d-2?' }]);
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
