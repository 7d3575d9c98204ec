/**
 * The per-day sums of a served scope held in JavaScript: a report of UTC days that filters no
 * transaction (the per-day sums' own case, queries.ts `reportFilter`) is summed here instead of
 * planned and run by DuckDB on every request. The rows are the ones `reportSelect` gives: the same
 * columns and values (exact decimals as whole ten-thousandths, cast to doubles as DuckDB casts
 * them, averages rounded half away from zero in whole numbers), sorted as `orderBy` sorts them.
 *
 * Loaded only where each column's magnitudes add up to less than 2^48 ten-thousandths (about 28
 * billion), so that every sum is a whole number a double holds exactly, an amount read as DuckDB's
 * double times 10^4 rounds back to its exact ten-thousandths, and where every time lies in years
 * 1970 to 9998: otherwise the scope keeps the SQL way.
 */
import type { ReportQuery } from '../model/query.js';
import { utcDayNumber } from '../model/period.js';
import type { Database } from './db.js';
import { REPORT_TIE_BREAK, sortRows } from './queries.js';
import { ident, int, join, sql, type Sql } from './sql.js';

/** What each column's magnitudes may add up to, in whole ten-thousandths (checked in doubles, with a margin). */
const BOUND = 2 ** 48 * 0.99;

/** The report_day columns kept per cell: counts, and amounts as whole ten-thousandths. */
const SUMS = ['n', 'wo', 'w', 'rn', 'rwo', 'rw', 'ref_wo', 'ref_w', 'ref_rwo', 'ref_rw'] as const;
const [N, WO, W, RN, RWO, RW, REF_WO, REF_W] = SUMS.map((_, k) => k) as [number, number, number, number, number, number, number, number];
/** The first of them a breakdown shows (ref_rwo and ref_rw are only summed per source): what the cells keep. */
const BREAKDOWN_SUMS = REF_W + 1;
/** Those summed over a source's currencies, per source: what the source's own figures need. */
const SOURCE_SUMS = ['n', 'rn', 'ref_wo', 'ref_w', 'ref_rwo', 'ref_rw'] as const;
const [SN, SRN, SREF_WO, SREF_W, SREF_RWO, SREF_RW] = SOURCE_SUMS.map((_, k) => k) as [number, number, number, number, number, number];
/** A column's scale to whole numbers: counts as they are, amounts in ten-thousandths. */
const scaleOf = (column: string) => (column === 'n' || column === 'rn' ? 1 : 10_000);

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

/** An amount of whole ten-thousandths as DuckDB casts the DECIMAL to a double (exact below 2^53, then one rounded division). */
const amount = (units: number): number => units / 10_000;

/**
 * An average to 2 decimals as queries.ts AVERAGE makes it: (2|units| + 100 count) div (200 count)
 * hundredths with the amount's sign, in whole numbers below 2^53, then divided by 100 as a double.
 */
function average(units: number, count: number): number {
  if (count === 0) return 0;
  const x = 2 * Math.abs(units) + 100 * count;
  const y = 200 * count;
  let q = Math.floor(x / y);
  // the division is rounded: step to the exact quotient
  if (q * y > x) q--;
  else if ((q + 1) * y <= x) q++;
  // sign(amount) times a whole number in SQL: never a negative zero
  return (units < 0 && q !== 0 ? -q : q) / 100;
}

/**
 * A time as whole milliseconds since 1970 (NaN: none, written null), what strftime
 * '%Y-%m-%dT%H:%M:%S.%gZ' keeps of it (epoch_ms, read as a double: exact, where µs past 2^53, after
 * 2255, would not be), in the same order as those texts (years 1970 to 9998, checked at load, are
 * written in as many characters); `timestamp` writes it.
 */
const millis = (ms: number): number | null => (Number.isNaN(ms) ? null : ms);
const timestamp = (ms: unknown): string | null => (ms === null ? null : new Date(ms as number).toISOString());

/**
 * Rows of groups (cells: a source key and an order currency; or source keys), each group's rows in
 * day order, one a day: `width` running totals (the day's sums added up from the group's first
 * row, so that a period's sums are two rows' difference), then, where kept (the sources'), the
 * day's first and last conversion (ms, NaN: none), side by side in `rows` (`stride` numbers a row)
 * so that a look at a group reads few cache lines.
 */
class DayRuns {
  private constructor(
    private readonly width: number,
    private readonly stride: number,
    /** Where each group's rows start (groupCount + 1 offsets); each row's day (days since 1970). */
    private readonly starts: Int32Array,
    private readonly days: Int32Array,
    /** Per group, its first and last day (0 when it has no row). */
    private readonly firstDays: Int32Array,
    private readonly lastDays: Int32Array,
    /** Per group, from its first day to its last: where its rows of later days start (see dayIndex); undefined when too large. */
    private readonly through: DayIndex | undefined,
    private readonly rows: Float64Array,
  ) {}

  /**
   * From rows sorted by group, then day: each row's group, its day, its `width` sums (each times
   * its scale rounds back to the exact whole number: below BOUND), then any columns more as they
   * are (the first and last conversion).
   */
  static of(groups: Float64Array, days: Int32Array, columns: Float64Array[], scales: number[], groupCount: number, dayIndexEntries: number): DayRuns {
    const width = scales.length;
    const stride = columns.length;
    const count = groups.length;
    const starts = new Int32Array(groupCount + 1);
    for (let i = 0; i < count; i++) starts[groups[i]! + 1]!++;
    for (let g = 0; g < groupCount; g++) starts[g + 1]! += starts[g]!;
    const rows = new Float64Array(count * stride);
    for (let k = 0; k < stride; k++) {
      const column = columns[k]!;
      const scale = scales[k];
      for (let i = 0; i < count; i++) {
        if (scale === undefined) rows[i * stride + k] = column[i]!;
        else {
          const value = Math.round(column[i]! * scale);
          rows[i * stride + k] = i > 0 && groups[i] === groups[i - 1] ? rows[(i - 1) * stride + k]! + value : value;
        }
      }
    }
    const [firstDays, lastDays] = [new Int32Array(groupCount), new Int32Array(groupCount)];
    for (let g = 0; g < groupCount; g++) {
      if (starts[g] === starts[g + 1]) continue;
      firstDays[g] = days[starts[g]!]!;
      lastDays[g] = days[starts[g + 1]! - 1]!;
    }
    return new DayRuns(width, stride, starts, days, firstDays, lastDays, dayIndex(starts, days, dayIndexEntries), rows);
  }

  get bytes(): number {
    const arrays = [this.starts, this.days, this.firstDays, this.lastDays, this.rows, this.through?.offsets, this.through?.rows];
    return arrays.reduce((n, a) => n + (a?.byteLength ?? 0), 0);
  }

  /** A group's first row in the period from `from` (its rows of days from then on). */
  low(group: number, from: number): number {
    const start = this.starts[group]!;
    if (from <= this.firstDays[group]! || start === this.starts[group + 1]) return start;
    return from > this.lastDays[group]! ? this.starts[group + 1]! : this.after(group, from - 1);
  }

  /** A group's last row in the period to `to` (one before its first row when it has none by then). */
  high(group: number, to: number): number {
    const start = this.starts[group]!;
    if (to < this.firstDays[group]! || start === this.starts[group + 1]) return start - 1;
    return (to >= this.lastDays[group]! ? this.starts[group + 1]! : this.after(group, to)) - 1;
  }

  /** Where a group's rows of days after `day` start, for a day from its first to before its last. */
  private after(group: number, day: number): number {
    const index = this.through;
    if (index) return index.rows[index.offsets[group]! + day - this.firstDays[group]!]!;
    return firstAtOrAfter(this.days, day + 1, this.starts[group]!, this.starts[group + 1]!);
  }

  /** Column k's sum over a group's rows lo..hi (lo <= hi). */
  sum(group: number, lo: number, hi: number, k: number): number {
    const { stride } = this;
    return this.rows[hi * stride + k]! - (lo > this.starts[group]! ? this.rows[(lo - 1) * stride + k]! : 0);
  }

  /** The first conversion of rows lo..hi (NaN: none), where kept. */
  first(lo: number, hi: number): number {
    const { stride } = this;
    let t = NaN;
    for (let i = lo; i <= hi && Number.isNaN(t); i++) t = this.rows[i * stride + this.width]!;
    return t;
  }

  /** The last conversion of rows lo..hi (NaN: none), where kept. */
  last(lo: number, hi: number): number {
    const { stride } = this;
    let t = NaN;
    for (let i = hi; i >= lo && Number.isNaN(t); i--) t = this.rows[i * stride + this.width + 1]!;
    return t;
  }
}

export class DaySums {
  private constructor(
    /** report_day by cell (source key × currencies + the currency's index): the SUMS; for a page's breakdowns. */
    private readonly cells: DayRuns,
    /** report_day by source key (its currencies' rows of a day added up): the SOURCE_SUMS; for every source's figures. */
    private readonly bySource: DayRuns,
    /** contact_day by day: the day, the source key, the previous day (days since 1970; before year 1 for none). */
    private readonly contactDays: Int32Array,
    private readonly contactKeys: Int32Array,
    private readonly previousDays: Int32Array,
    /** The order currencies in DuckDB's order (a cell's currency index). */
    private readonly currencies: string[],
    /** source_info by source key. */
    private readonly sources: (SourceRow | undefined)[],
  ) {}

  /**
   * The arrays a page is made in, made on the first page and reused by every page after (page()
   * runs to its end without yielding, so no two pages share them at once): per source key, its
   * first and last row in the period and its unique contacts.
   */
  private scratch?: { lo: Int32Array; hi: Int32Array; unique: Int32Array };

  /** The scope's report_day, contact_day and source_info read into typed arrays; undefined where a value does not fit (see above). */
  static async load(db: Database, relation: (name: string) => Sql, { dayIndexEntries = DAY_INDEX_LIMIT }: { dayIndexEntries?: number } = {}): Promise<DaySums | undefined> {
    const reportDay = relation('report_day');
    if (!(await fits(db, reportDay))) return undefined;
    const currencies = (await db.all<{ currency: string }>(sql`SELECT DISTINCT currency FROM ${reportDay} ORDER BY currency`)).map((r) => r.currency);
    const sources = await db.all<SourceRow & { source_key: number }>(sql`SELECT CAST(source_key AS INTEGER) AS source_key, source_type, source_id AS id, name,
        campaign_id, smartflow_id, smartflow_name, delivery_id, delivery_name, strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "sourceStartedAt" FROM ${relation('source_info')}`);
    const byKey: (SourceRow | undefined)[] = [];
    for (const { source_key, ...source } of sources) byKey[source_key] = source;
    const times = sql`CAST(epoch_ms(first_at) AS DOUBLE), CAST(epoch_ms(last_at) AS DOUBLE)`;
    const [cellDays, cells, ...cellColumns] = await db.numberColumns(sql`SELECT CAST(day - DATE '1970-01-01' AS INTEGER), CAST(source_key * ${int(currencies.length)} + c.i AS INTEGER),
        ${join(SUMS.map((c) => sql`CAST(coalesce(${ident(c)}, 0) AS DOUBLE)`))}, ${times}
      FROM ${reportDay} JOIN (SELECT currency, row_number() OVER (ORDER BY currency) - 1 AS i FROM (SELECT DISTINCT currency FROM ${reportDay})) c USING (currency)
      ORDER BY source_key, c.i, day`);
    const days = Int32Array.from(cellDays!);
    const bySource = sourceDays(cells!, days, cellColumns, currencies.length);
    const contacts = await db.numberColumns(sql`SELECT CAST(day - DATE '1970-01-01' AS INTEGER), CAST(source_key AS INTEGER),
        CAST(coalesce(prev_day, DATE '0001-01-01') - DATE '1970-01-01' AS INTEGER) FROM ${relation('contact_day')} ORDER BY day`);
    const [contactDays, contactKeys, previousDays] = contacts.map((c) => Int32Array.from(c));
    return new DaySums(
      DayRuns.of(cells!, days, cellColumns.slice(0, BREAKDOWN_SUMS), SUMS.slice(0, BREAKDOWN_SUMS).map(scaleOf), byKey.length * currencies.length, dayIndexEntries),
      DayRuns.of(bySource.keys, bySource.days, bySource.columns, SOURCE_SUMS.map(() => 1), byKey.length, dayIndexEntries),
      contactDays!,
      contactKeys!,
      previousDays!,
      currencies,
      byKey,
    );
  }

  /** The bytes these arrays hold in Node's memory (what a plugin file's memory budget counts beside DuckDB's). */
  get bytes(): number {
    const { scratch } = this;
    const arrays = [this.contactDays, this.contactKeys, this.previousDays, scratch?.lo, scratch?.hi, scratch?.unique];
    return this.cells.bytes + this.bySource.bytes + arrays.reduce((n, a) => n + (a?.byteLength ?? 0), 0);
  }

  /** The report's rows of the period (every source with a per-day row in it), sorted as the query asks and paged; totalCount all of them. */
  page(query: ReportQuery, referenceCurrency: string): { rows: Record<string, unknown>[]; totalCount: number } {
    const from = utcDayNumber(query.dateFrom);
    const to = utcDayNumber(query.dateTo);
    const { lo, hi } = this.rowsOf(from, to);
    const unique = this.uniqueContacts(from, to);
    const rows: Record<string, unknown>[] = [];
    for (let key = 0; key < this.sources.length; key++) {
      const row = lo[key]! <= hi[key]! ? this.figures(key, lo[key]!, hi[key]!, unique[key]!, referenceCurrency) : undefined;
      if (row) rows.push(row);
    }
    const sorted = sortRows(rows, query.sort, REPORT_TIE_BREAK);
    const page = sorted.slice(query.offset, query.offset + query.limit);
    // the page's rows written out: their times, and their breakdowns
    const rowsOf = page.map((row) => ({
      ...row,
      firstConversionAt: timestamp(row.firstConversionAt),
      lastConversionAt: timestamp(row.lastConversionAt),
      breakdown: this.breakdown(row.source_key as number, from, to),
    }));
    return { rows: rowsOf, totalCount: sorted.length };
  }

  /** The scratch arrays (see scratch), made on the first page. */
  private scratchArrays(): NonNullable<DaySums['scratch']> {
    const count = this.sources.length;
    return (this.scratch ??= { lo: new Int32Array(count), hi: new Int32Array(count), unique: new Int32Array(count) });
  }

  /**
   * Each source key's first and last row in the period (by source: a source's days, whatever the
   * currency), all found before any is read, so that the memory reads of one source do not wait
   * on those of the one before.
   */
  private rowsOf(from: number, to: number): { lo: Int32Array; hi: Int32Array } {
    const { lo, hi } = this.scratchArrays();
    for (let key = 0; key < this.sources.length; key++) {
      lo[key] = this.bySource.low(key, from);
      hi[key] = this.bySource.high(key, to);
    }
    return { lo, hi };
  }

  /**
   * Per source key: the contacts whose first conversion day through it in the period lies in it
   * (contact_day with prev_day before the period), counted without a branch: a branch that goes
   * either way at random costs four times as much on a month of 95,000 rows.
   */
  private uniqueContacts(from: number, to: number): Int32Array {
    const { unique } = this.scratchArrays();
    unique.fill(0);
    const { contactDays, contactKeys, previousDays } = this;
    const lo = firstAtOrAfter(contactDays, from);
    const hi = firstAtOrAfter(contactDays, to + 1, lo);
    // the sign bit of previous - from: 1 where the previous day is before the period (days are far from ±2^31)
    for (let i = lo; i < hi; i++) unique[contactKeys[i]!]! += (previousDays[i]! - from) >>> 31;
    return unique;
  }

  /**
   * A source's row without its breakdown, its times in milliseconds: its columns and the figures
   * in the reference currency (PERIOD_FIGURES) over its rows lo..hi; undefined without a source row.
   */
  private figures(key: number, lo: number, hi: number, uc: number, referenceCurrency: string): Record<string, unknown> | undefined {
    const source = this.sources[key];
    if (!source) return undefined;
    const runs = this.bySource;
    const sum = (k: number) => runs.sum(key, lo, hi, k);
    const [n, rn, wo, w, rwo, rw] = [sum(SN), sum(SRN), sum(SREF_WO), sum(SREF_W), sum(SREF_RWO), sum(SREF_RW)];
    return {
      source_key: key,
      ...source,
      firstConversionAt: millis(runs.first(lo, hi)),
      lastConversionAt: millis(runs.last(lo, hi)),
      conversionsAmountWoTax: amount(wo),
      conversionsAmountWTax: amount(w),
      conversionsNumber: n,
      referenceCurrency,
      uniqueContacts: uc,
      averageConversion: average(w, n),
      averageUniqueConversion: average(w, uc),
      refundsAmountWoTax: amount(rwo),
      refundsAmountWTax: amount(rw),
      refundsNumber: rn,
      grossConversionsAmountWoTax: amount(wo + rwo),
      grossConversionsAmountWTax: amount(w + rw),
      grossConversionsNumber: n + rn,
    };
  }

  /** A source's breakdown per order currency over the period, in currency order (PER_SOURCE's structs, field by field). */
  private breakdown(key: number, from: number, to: number): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    const runs = this.cells;
    for (let c = 0, cell = key * this.currencies.length; c < this.currencies.length; c++, cell++) {
      const [lo, hi] = [runs.low(cell, from), runs.high(cell, to)];
      if (lo > hi) continue;
      const s = Array.from({ length: BREAKDOWN_SUMS }, (_, k) => runs.sum(cell, lo, hi, k));
      out.push({
        currency: this.currencies[c]!,
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
      });
    }
    return out;
  }
}

/**
 * report_day by source key and day (its currencies' rows of a day added up), from its rows by cell
 * (sorted by source key, currency, day): each row's source key, day, the SOURCE_SUMS as whole
 * numbers (each cell's value rounded back to its whole ten-thousandths first, so the sum is exact,
 * as SQL's sum of the decimals), then the day's first and last conversion (the least and greatest).
 */
function sourceDays(cells: Float64Array, days: Int32Array, columns: Float64Array[], currencyCount: number): { keys: Float64Array; days: Int32Array; columns: Float64Array[] } {
  const count = cells.length;
  const at = SOURCE_SUMS.map((c) => SUMS.indexOf(c));
  const out = { keys: new Float64Array(count), days: new Int32Array(count), columns: Array.from({ length: SOURCE_SUMS.length + 2 }, () => new Float64Array(count)) };
  const [first, last] = [columns[SUMS.length]!, columns[SUMS.length + 1]!];
  const order = new Int32Array(count);
  let rows = 0;
  for (let a = 0; a < count; ) {
    const key = Math.floor(cells[a]! / currencyCount);
    let b = a;
    while (b < count && Math.floor(cells[b]! / currencyCount) === key) b++;
    // the source's rows by day (then by cell: any order adds up the same)
    const run = order.subarray(0, b - a);
    for (let i = a; i < b; i++) run[i - a] = i;
    run.sort((x, y) => days[x]! - days[y]! || x - y);
    for (let r = 0; r < run.length; r++) {
      const i = run[r]!;
      if (r === 0 || days[i] !== days[run[r - 1]!]) {
        [out.keys[rows], out.days[rows]] = [key, days[i]!];
        [out.columns[at.length]![rows], out.columns[at.length + 1]![rows]] = [NaN, NaN];
        rows++;
      }
      const o = rows - 1;
      at.forEach((k, c) => (out.columns[c]![o]! += Math.round(columns[k]![i]! * scaleOf(SUMS[k]!))));
      const [f, l] = [out.columns[at.length]!, out.columns[at.length + 1]!];
      if (!(first[i]! >= f[o]!)) f[o] = Number.isNaN(first[i]!) ? f[o]! : first[i]!;
      if (!(last[i]! <= l[o]!)) l[o] = Number.isNaN(last[i]!) ? l[o]! : last[i]!;
    }
    a = b;
  }
  return { keys: out.keys.slice(0, rows), days: out.days.slice(0, rows), columns: out.columns.map((c) => c.slice(0, rows)) };
}

/** Whether report_day fits the arrays: each column's magnitudes below BOUND (in doubles: HUGEINT arithmetic is slow), no NULL key, times in years 1970 to 9998. */
async function fits(db: Database, reportDay: Sql): Promise<boolean> {
  const tenThousandths = (c: (typeof SUMS)[number]) => sql`CAST(${ident(c)} AS DOUBLE) * ${int(scaleOf(c))}`;
  const row = await db.one<{ fits: boolean }>(sql`SELECT ${join(SUMS.map((c) => sql`coalesce(sum(abs(${tenThousandths(c)})) < ${BOUND}, true)`), sql` AND `)}
      AND count(*) FILTER (WHERE currency IS NULL OR source_key IS NULL OR source_key < 0) = 0
      AND coalesce(min(first_at) >= TIMESTAMP '1970-01-01', true) AND coalesce(max(last_at) < TIMESTAMP '9999-01-01', true) AS fits
    FROM ${reportDay}`);
  return row?.fits === true;
}

/** Per group, for each day from its first to its last: where its rows of later days start. */
interface DayIndex {
  offsets: Int32Array;
  rows: Int32Array;
}

/** At most this many entries in a DayIndex (16 MB); beyond, binary searches find the days. */
const DAY_INDEX_LIMIT = 4_000_000;

/** The DayIndex of groups whose rows are in day order (undefined past `limit` entries, DAY_INDEX_LIMIT by default: cells spanning many years). */
function dayIndex(starts: Int32Array, days: Int32Array, limit: number): DayIndex | undefined {
  const cellCount = starts.length - 1;
  const offsets = new Int32Array(cellCount + 1);
  for (let c = 0; c < cellCount; c++) {
    const span = starts[c + 1]! > starts[c]! ? days[starts[c + 1]! - 1]! - days[starts[c]!]! + 1 : 0;
    offsets[c + 1] = offsets[c]! + span;
    if (offsets[c + 1]! > limit) return undefined;
  }
  const rows = new Int32Array(offsets[cellCount]!);
  for (let c = 0; c < cellCount; c++) {
    let i = starts[c]!;
    for (let at = offsets[c]!, day = days[i]!; at < offsets[c + 1]!; at++, day++) {
      while (i < starts[c + 1]! && days[i]! <= day) i++;
      rows[at] = i;
    }
  }
  return { offsets, rows };
}

/** The first index in [lo, hi) of a sorted array whose value is at least `value` (hi when none). */
function firstAtOrAfter(sorted: Int32Array, value: number, lo = 0, hi = sorted.length): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
