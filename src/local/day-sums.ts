/**
 * The per-day sums of a served scope held in JavaScript: a report of UTC days that filters no
 * transaction (the per-day sums' own case, queries.ts `answeredFromDays`) is summed here instead of
 * planned and run by DuckDB on every request. The rows are the ones `reportSelect` gives: the same
 * columns and values (exact decimals as whole ten-thousandths, cast to doubles as DuckDB casts
 * them, averages rounded half away from zero in integers), sorted as `orderBy` sorts them.
 *
 * Loaded only where every amount and sum fits a double's integers (2^53 ten-thousandths, about
 * 900 billion) and every time a JavaScript date can name: otherwise the scope keeps the SQL way.
 */
import type { ReportQuery } from '../model/query.js';
import type { Database } from './db.js';
import { compareText, sortRows } from './queries.js';
import { ident, int, join, sql, type Sql } from './sql.js';

const DAY_MS = 86_400_000;
/** REPORT_TIE_BREAK's columns (queries.ts). */
const REPORT_TIE_BREAK_FIELDS = ['source_type', 'id'];
/** Whole ten-thousandths a double holds exactly, with room for a period's sum of them. */
const SAFE = 2n ** 53n;

/** The report_day columns kept, as whole ten-thousandths (amounts) or counts. */
const SUMS = ['n', 'wo', 'w', 'rn', 'rwo', 'rw', 'ref_wo', 'ref_w', 'ref_rwo', 'ref_rw'] as const;
type SumName = (typeof SUMS)[number];

/** A source's columns as the report's SQL names them (source_info), sourceStartedAt formatted by DuckDB. */
interface SourceRow {
  source_type: string;
  id: string;
  name: string | null;
  campaign_id: string | null;
  smartflow_id: string | null;
  smartflow_name: string | null;
  delivery_id: string | null;
  delivery_name: string | null;
  sourceStartedAt: string | null;
}

/** One (source, currency) of a period, or one source over its currencies: sums and the first and last conversion (µs since 1970, NaN for none). */
interface Totals {
  sums: Float64Array;
  first: number;
  last: number;
}

const newTotals = (): Totals => ({ sums: new Float64Array(SUMS.length), first: NaN, last: NaN });
const at = (name: SumName) => SUMS.indexOf(name);
const [N, WO, W, RN, RWO, RW, REF_WO, REF_W, REF_RWO, REF_RW] = SUMS.map(at) as [number, number, number, number, number, number, number, number, number, number];

/** An amount of whole ten-thousandths as DuckDB casts the DECIMAL to a double (exact below 2^53, then one rounded division). */
const amount = (units: number): number => units / 10_000;

/**
 * An average to 2 decimals as queries.ts AVERAGE makes it: units / count rounded half away from
 * zero to whole hundredths, in integers, then divided by 100 as a double.
 */
function average(units: number, count: number): number {
  if (count === 0) return 0;
  const a = BigInt(Math.abs(units));
  const c = BigInt(count);
  const hundredths = Number((2n * a + 100n * c) / (200n * c));
  // sign(amount) times a whole number in SQL: never a negative zero
  return (units < 0 && hundredths !== 0 ? -hundredths : hundredths) / 100;
}

/** A TIMESTAMP of µs since 1970 as strftime '%Y-%m-%dT%H:%M:%S.%gZ' writes it (years 1 to 9999, checked at load). */
const timestamp = (us: number): string | null => (Number.isNaN(us) ? null : new Date(Math.floor(us / 1000)).toISOString());

export class DaySums {
  private constructor(
    /** report_day, sorted by day: the day (days since 1970), the source key, the currency's index, then SUMS and the first and last conversion. */
    private readonly days: Int32Array,
    private readonly keys: Int32Array,
    private readonly currencyOf: Int32Array,
    private readonly sums: Float64Array,
    private readonly firsts: Float64Array,
    private readonly lasts: Float64Array,
    /** contact_day, sorted by day: the day, the source key, the previous day (or the smallest integer). */
    private readonly contactDays: Int32Array,
    private readonly contactKeys: Int32Array,
    private readonly previousDays: Int32Array,
    private readonly currencies: string[],
    private readonly sources: Map<number, SourceRow>,
  ) {}

  /**
   * The scope's report_day, contact_day and source_info read into typed arrays; undefined where a
   * value does not fit (an amount past 2^53 ten-thousandths in all, a time outside years 1970..9999).
   */
  static async load(db: Database, relation: (name: string) => Sql): Promise<DaySums | undefined> {
    const reportDay = relation('report_day');
    const units = (c: SumName) => (c === 'n' || c === 'rn' ? sql`coalesce(${ident(c)}, 0)` : sql`coalesce(CAST(${ident(c)} * 10000 AS HUGEINT), 0)`);
    // Every sum of a period is at most the sum of the magnitudes over all days: below 2^53, every partial sum is exact.
    const bounds = await db.one<{ fits: boolean }>(sql`SELECT coalesce(total < ${int(SAFE)}, true) AND nulls = 0
        AND coalesce(first_at >= TIMESTAMP '1970-01-01', true) AND coalesce(last_at < TIMESTAMP '9999-12-31', true) AS fits
      FROM (SELECT ${join(SUMS.map((c) => sql`sum(abs(${units(c)}))`), sql` + `)} AS total, count(*) FILTER (WHERE currency IS NULL OR source_key IS NULL) AS nulls,
        min(first_at) AS first_at, max(last_at) AS last_at FROM ${reportDay})`);
    if (!bounds?.fits) return undefined;
    const currencies = (await db.all<{ currency: string }>(sql`SELECT DISTINCT currency FROM ${reportDay} ORDER BY currency`)).map((r) => r.currency);
    const rows = await db.columns(sql`SELECT CAST(r.day - DATE '1970-01-01' AS INTEGER), CAST(r.source_key AS INTEGER), CAST(c.i AS INTEGER),
        ${join(SUMS.map((c) => sql`CAST(${units(c)} AS DOUBLE)`))},
        CAST(epoch_us(r.first_at) AS DOUBLE), CAST(epoch_us(r.last_at) AS DOUBLE)
      FROM ${reportDay} r JOIN (SELECT currency, row_number() OVER (ORDER BY currency) - 1 AS i FROM (SELECT DISTINCT currency FROM ${reportDay})) c USING (currency)
      ORDER BY r.day, r.source_key, r.currency`);
    const contacts = await db.columns(sql`SELECT CAST(day - DATE '1970-01-01' AS INTEGER), CAST(source_key AS INTEGER),
        CAST(coalesce(prev_day, DATE '0001-01-01') - DATE '1970-01-01' AS INTEGER) FROM ${relation('contact_day')} ORDER BY day`);
    const sources = await db.all<SourceRow & { source_key: number }>(sql`SELECT CAST(source_key AS INTEGER) AS source_key, source_type, source_id AS id, name,
        campaign_id, smartflow_id, smartflow_name, delivery_id, delivery_name, strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "sourceStartedAt" FROM ${relation('source_info')}`);
    const n = rows[0]?.length ?? 0;
    const sums = new Float64Array(n * SUMS.length);
    SUMS.forEach((_, k) => rows[3 + k]!.forEach((v, i) => (sums[i * SUMS.length + k] = v as number)));
    const times = (column: unknown[]) => Float64Array.from(column, (v) => (v === null ? NaN : (v as number)));
    return new DaySums(
      Int32Array.from(rows[0] as number[]),
      Int32Array.from(rows[1] as number[]),
      Int32Array.from(rows[2] as number[]),
      sums,
      times(rows[3 + SUMS.length]!),
      times(rows[4 + SUMS.length]!),
      Int32Array.from(contacts[0] as number[]),
      Int32Array.from(contacts[1] as number[]),
      Int32Array.from(contacts[2] as number[]),
      currencies,
      new Map(sources.map(({ source_key, ...source }) => [source_key, source])),
    );
  }

  /** The report's rows of the period (every source with a per-day row in it), sorted as the query asks and paged; totalCount all of them. */
  page(query: ReportQuery, referenceCurrency: string): { rows: Record<string, unknown>[]; totalCount: number } {
    const from = dayNumber(query.dateFrom);
    const to = dayNumber(query.dateTo);
    const perSource = this.sumsOf(from, to);
    const unique = this.uniqueContacts(from, to);
    const rows = [...perSource].map(([key, currencies]) => this.row(key, currencies, unique.get(key) ?? 0, referenceCurrency));
    const sorted = sortRows(rows, query.sort, REPORT_TIE_BREAK_FIELDS);
    return { rows: sorted.slice(query.offset, query.offset + query.limit), totalCount: sorted.length };
  }

  /** Per source key, per currency index: the period's sums (PER_CURRENCY_FROM_DAYS). */
  private sumsOf(from: number, to: number): Map<number, Map<number, Totals>> {
    const perSource = new Map<number, Map<number, Totals>>();
    for (let i = firstAtOrAfter(this.days, from); i < this.days.length && this.days[i]! <= to; i++) {
      const key = this.keys[i]!;
      let currencies = perSource.get(key);
      if (!currencies) perSource.set(key, (currencies = new Map()));
      const currency = this.currencyOf[i]!;
      let totals = currencies.get(currency);
      if (!totals) currencies.set(currency, (totals = newTotals()));
      for (let k = 0; k < SUMS.length; k++) totals.sums[k]! += this.sums[i * SUMS.length + k]!;
      addTimes(totals, this.firsts[i]!, this.lasts[i]!);
    }
    return perSource;
  }

  /** Per source key: the contacts whose first conversion day through it in the period lies in it (contact_day with prev_day before the period). */
  private uniqueContacts(from: number, to: number): Map<number, number> {
    const counts = new Map<number, number>();
    for (let i = firstAtOrAfter(this.contactDays, from); i < this.contactDays.length && this.contactDays[i]! <= to; i++) {
      if (this.previousDays[i]! < from) counts.set(this.contactKeys[i]!, (counts.get(this.contactKeys[i]!) ?? 0) + 1);
    }
    return counts;
  }

  /** A source's row: its columns, the figures in the reference currency (PERIOD_FIGURES) and the breakdown per order currency in currency order (PER_SOURCE). */
  private row(key: number, currencies: Map<number, Totals>, uc: number, referenceCurrency: string): Record<string, unknown> {
    const total = newTotals();
    const breakdown = [...currencies].sort(([a], [b]) => compareText(this.currencies[a]!, this.currencies[b]!)).map(([currency, t]) => {
      const s = t.sums;
      total.sums[N]! += s[N]!;
      total.sums[RN]! += s[RN]!;
      total.sums[WO]! += s[REF_WO]!;
      total.sums[W]! += s[REF_W]!;
      total.sums[RWO]! += s[REF_RWO]!;
      total.sums[RW]! += s[REF_RW]!;
      addTimes(total, t.first, t.last);
      return {
        currency: this.currencies[currency]!,
        conversionsAmountWoTax: amount(s[WO]!),
        conversionsAmountWTax: amount(s[W]!),
        conversionsNumber: s[N]!,
        averageConversion: average(s[W]!, s[N]!),
        refundsAmountWoTax: amount(s[RWO]!),
        refundsAmountWTax: amount(s[RW]!),
        refundsNumber: s[RN]!,
        grossConversionsAmountWoTax: amount(s[WO]! + s[RWO]!),
        grossConversionsAmountWTax: amount(s[W]! + s[RW]!),
        grossConversionsNumber: s[N]! + s[RN]!,
        conversionAmountWoTaxReference: amount(s[REF_WO]!),
        conversionAmountWTaxReference: amount(s[REF_W]!),
      };
    });
    const g = total.sums;
    return {
      ...this.sources.get(key)!,
      firstConversionAt: timestamp(total.first),
      lastConversionAt: timestamp(total.last),
      conversionsAmountWoTax: amount(g[WO]!),
      conversionsAmountWTax: amount(g[W]!),
      conversionsNumber: g[N]!,
      referenceCurrency,
      uniqueContacts: uc,
      averageConversion: average(g[W]!, g[N]!),
      averageUniqueConversion: average(g[W]!, uc),
      refundsAmountWoTax: amount(g[RWO]!),
      refundsAmountWTax: amount(g[RW]!),
      refundsNumber: g[RN]!,
      grossConversionsAmountWoTax: amount(g[WO]! + g[RWO]!),
      grossConversionsAmountWTax: amount(g[W]! + g[RW]!),
      grossConversionsNumber: g[N]! + g[RN]!,
      breakdown,
    };
  }
}

function addTimes(totals: Totals, first: number, last: number): void {
  if (!(first >= totals.first)) totals.first = Number.isNaN(first) ? totals.first : first;
  if (!(last <= totals.last)) totals.last = Number.isNaN(last) ? totals.last : last;
}

/** The days since 1970 of a YYYY-MM-DD date. */
const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS;

/** The first index of a sorted array whose value is at least `value`. */
function firstAtOrAfter(sorted: Int32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
