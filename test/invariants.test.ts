/** Invariants that must hold on any dataset: the samples and a generated two-plugin dataset. */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LocalBackend } from '../src/local/backend.js';
import { generateDataset } from '../src/local/generate.js';
import { sql } from '../src/local/sql.js';
import type { AggregateRow, ConversionRecord } from '../src/model/types.js';
import { itemsQuery, reportQuery, SAMPLES, tempDir, withBackend } from './helpers.js';

const cents = (n: number) => Math.round(n * 100);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
/** The canonical text of a decimal: no trailing zeros, as JSON writes a number. */
const canonical = (decimal: string) => (decimal.includes('.') ? decimal.replace(/0+$/, '').replace(/\.$/, '') : decimal);

async function all<T>(stream: Promise<{ rows: AsyncIterable<T> }>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of (await stream).rows) out.push(row);
  return out;
}

/** Every page of a query, limit rows each, until a short one; each page's totalCount must be total. */
async function walk<T>(total: number, limit: number, page: (limit: number, offset: number) => Promise<{ rows: T[]; paging: { totalCount: number } }>): Promise<T[]> {
  const walked: T[] = [];
  for (let offset = 0; ; offset += limit) {
    const got = await page(limit, offset);
    expect(got.paging.totalCount).toBe(total);
    walked.push(...got.rows);
    if (got.rows.length < limit) return walked;
  }
}

async function checkInvariants(backend: LocalBackend, dateFrom: string, dateTo: string): Promise<void> {
  const rows: AggregateRow[] = await all(backend.allReport(reportQuery(dateFrom, dateTo)));
  const items: ConversionRecord[] = await all(backend.allItems(itemsQuery(dateFrom, dateTo)));
  expect(rows.length).toBeGreaterThan(3);
  expect(items.some((i) => i.isRefund)).toBe(true);

  for (const row of rows) {
    const mine = items.filter((i) => i.source.type === row.source.type && i.source.id === row.id);
    const orders = mine.filter((i) => !i.isRefund);
    const refunds = mine.filter((i) => i.isRefund);
    // the items of each row add up exactly to the row
    expect(orders.length).toBe(row.conversionsNumber);
    expect(refunds.length).toBe(row.refundsNumber);
    expect(sum(orders.map((i) => cents(i.conversionsReferenceAmount)))).toBe(cents(row.conversionsAmountWTax));
    expect(sum(refunds.map((i) => cents(i.conversionsReferenceAmount)))).toBe(cents(row.refundsAmountWTax));
    expect(new Set(orders.map((i) => i.contactId)).size).toBe(row.uniqueContacts);
    // gross = conversions + refunds, field by field
    expect(cents(row.grossConversionsAmountWTax)).toBe(cents(row.conversionsAmountWTax) + cents(row.refundsAmountWTax));
    expect(cents(row.grossConversionsAmountWoTax)).toBe(cents(row.conversionsAmountWoTax) + cents(row.refundsAmountWoTax));
    expect(row.grossConversionsNumber).toBe(row.conversionsNumber + row.refundsNumber);
    // the breakdown's reference amounts add up to the row; its own amounts to the items in that currency
    expect(sum(row.breakdown.map((b) => cents(b.conversionAmountWTaxReference)))).toBe(cents(row.conversionsAmountWTax));
    expect(sum(row.breakdown.map((b) => cents(b.conversionAmountWoTaxReference)))).toBe(cents(row.conversionsAmountWoTax));
    for (const b of row.breakdown) {
      const inCurrency = orders.filter((i) => i.conversionsCurrency === b.currency);
      expect(inCurrency.length).toBe(b.conversionsNumber);
      expect(sum(inCurrency.map((i) => cents(i.conversionsAmount)))).toBe(cents(b.conversionsAmountWTax));
      expect(cents(b.grossConversionsAmountWTax)).toBe(cents(b.conversionsAmountWTax) + cents(b.refundsAmountWTax));
    }
  }

  // rule 6: the non-smartflow rows add up to the campaign and automation items
  const nonSmartflow = rows.filter((r) => r.source.type !== 'smartflow');
  const campaignItems = items.filter((i) => i.source.type !== 'smartflow' && !i.isRefund);
  expect(sum(nonSmartflow.map((r) => cents(r.conversionsAmountWTax)))).toBe(sum(campaignItems.map((i) => cents(i.conversionsReferenceAmount))));

  // walking all pages returns every record once, in the order of the stream; the report's rows too, in the order of
  // allReport (which reads them with their count in one statement)
  expect(await walk(items.length, 37, (limit, offset) => backend.items(itemsQuery(dateFrom, dateTo, { limit, offset })))).toEqual(items);
  expect(await walk(rows.length, 2, (limit, offset) => backend.report(reportQuery(dateFrom, dateTo, { limit, offset })))).toEqual(rows);
  // allReport from an offset: the rows after it, with the count of all; past the last row, none and still the count
  const from3 = await backend.allReport(reportQuery(dateFrom, dateTo, { offset: 3 }));
  expect(from3.totalCount).toBe(rows.length);
  expect(await all(Promise.resolve(from3))).toEqual(rows.slice(3));
  const past = await backend.allReport(reportQuery(dateFrom, dateTo, { offset: rows.length + 5 }));
  expect([past.totalCount, (await all(Promise.resolve(past))).length]).toEqual([rows.length, 0]);
  const keys = items.map((i) => `${i.orderId}|${i.isRefund}|${i.datetime}|${i.conversionsAmount}`);
  expect(new Set(keys).size).toBe(keys.length);

  // JSON numbers equal the decimals DuckDB summed
  const decimals = await backend.scope.db.all<{ t: string; i: string; w: string; r: string }>(
    sql`SELECT source_type AS t, source_id AS i,
       CAST(coalesce(sum(ref_w) FILTER (WHERE NOT is_refund), 0) AS VARCHAR) AS w,
       CAST(coalesce(sum(ref_w) FILTER (WHERE is_refund), 0) AS VARCHAR) AS r
     FROM ${backend.scope.relation('conv')} WHERE day BETWEEN CAST(${dateFrom} AS DATE) AND CAST(${dateTo} AS DATE) GROUP BY ALL`,
  );
  for (const d of decimals) {
    const row = rows.find((r) => r.source.type === d.t && r.id === d.i)!;
    expect(JSON.stringify(row.conversionsAmountWTax)).toBe(canonical(d.w));
    expect(JSON.stringify(row.refundsAmountWTax)).toBe(canonical(d.r));
  }
}

describe('invariants on samples/shop', () => {
  it('hold for the whole sample and for single months', async () => {
    await withBackend(SAMPLES, async (b) => {
      await checkInvariants(b, '2024-01-01', '2024-04-30');
      await checkInvariants(b, '2024-03-01', '2024-03-31');
    });
  });
});

describe('invariants on a generated dataset with two plugins', () => {
  let dir = '';
  beforeAll(async () => {
    dir = join(tempDir(), 'gen');
    await generateDataset({
      out: dir,
      seed: 99,
      contacts: 800,
      orders: 3000,
      touches: 20000,
      from: '2024-01-01',
      to: '2024-06-30',
      format: 'parquet',
      plugins: 2,
    });
  });

  it('hold for each plugin, whose reference currencies differ', async () => {
    const references: string[] = [];
    for (const plugin of ['shop-1', 'shop-2']) {
      await withBackend(
        dir,
        async (b) => {
          references.push(b.referenceCurrency);
          await checkInvariants(b, '2024-02-01', '2024-05-31');
        },
        { plugin },
      );
    }
    expect(references).toEqual(['EUR', 'CZK']);
  });
});
