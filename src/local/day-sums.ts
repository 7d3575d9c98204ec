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
import type { Database } from './db.js';
import { REPORT_TIE_BREAK, sortRows } from './queries.js';
import { ident, int, join, sql, type Sql } from './sql.js';

const DAY_MS = 86_400_000;
/** What each column's magnitudes may add up to, in whole ten-thousandths (checked in doubles, with a margin). */
const BOUND = 2 ** 48 * 0.99;

/** The report_day columns kept: counts, and amounts as whole ten-thousandths. */
const SUMS = ['n', 'wo', 'w', 'rn', 'rwo', 'rw', 'ref_wo', 'ref_w', 'ref_rwo', 'ref_rw'] as const;
const S = SUMS.length;
const [N, WO, W, RN, RWO, RW, REF_WO, REF_W, REF_RWO, REF_RW] = SUMS.map((_, k) => k) as [number, number, number, number, number, number, number, number, number, number];
/** A row of DaySums.rows: the SUMS' running totals, then the day's first and last conversion. */
const FIRST = S;
const LAST = S + 1;
const ROW = S + 2;

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

/** A period's sums per cell (a source key and a currency), with the first and last conversion. */
interface PeriodSums {
  sums: Float64Array;
  first: Float64Array;
  last: Float64Array;
  seen: Uint8Array;
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
 * A TIMESTAMP of µs since 1970 as whole milliseconds (null: none): what strftime
 * '%Y-%m-%dT%H:%M:%S.%gZ' keeps of it, in the same order as those texts (years 1970 to 9998,
 * checked at load, are written in as many characters); `timestamp` writes it.
 */
const millis = (us: number): number | null => (Number.isNaN(us) ? null : Math.floor(us / 1000));
const timestamp = (ms: unknown): string | null => (ms === null ? null : new Date(ms as number).toISOString());

/** The days since 1970 of a YYYY-MM-DD date. */
const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS;

export class DaySums {
  private constructor(
    /**
     * report_day by cell (source key × currencies + the currency's index), then day: where each
     * cell's rows start (cellCount + 1 offsets), each row's day (days since 1970), and each row's
     * ROW numbers in `rows`: the SUMS added up from the cell's first row to this one (a period's
     * sums are two rows' difference), then the first and last conversion (µs, NaN: none), side by
     * side so that a cell's look reads few cache lines.
     */
    private readonly starts: Int32Array,
    private readonly days: Int32Array,
    /** Per cell, its first and last day (0 when it has no row). */
    private readonly firstDays: Int32Array,
    private readonly lastDays: Int32Array,
    /** Per cell, from its first day to its last: where its rows of later days start (see dayIndex); undefined when too large. */
    private readonly through: DayIndex | undefined,
    private readonly rows: Float64Array,
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
   * The arrays a period's sums are made in, made on the first page and reused by every page after
   * (page() runs to its end without yielding, so no two pages share them at once): a report of 500
   * sources would otherwise allocate a quarter of a megabyte for the garbage collector a request.
   */
  private scratch?: PeriodSums & { lo: Int32Array; hi: Int32Array; unique: Int32Array };

  /** The scope's report_day, contact_day and source_info read into typed arrays; undefined where a value does not fit (see above). */
  static async load(db: Database, relation: (name: string) => Sql, { dayIndexEntries = DAY_INDEX_LIMIT }: { dayIndexEntries?: number } = {}): Promise<DaySums | undefined> {
    const reportDay = relation('report_day');
    if (!(await fits(db, reportDay))) return undefined;
    const currencies = (await db.all<{ currency: string }>(sql`SELECT DISTINCT currency FROM ${reportDay} ORDER BY currency`)).map((r) => r.currency);
    const sources = await db.all<SourceRow & { source_key: number }>(sql`SELECT CAST(source_key AS INTEGER) AS source_key, source_type, source_id AS id, name,
        campaign_id, smartflow_id, smartflow_name, delivery_id, delivery_name, strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "sourceStartedAt" FROM ${relation('source_info')}`);
    const byKey: (SourceRow | undefined)[] = [];
    for (const { source_key, ...source } of sources) byKey[source_key] = source;
    const [dayColumn, cells, ...rest] = await db.numberColumns(sql`SELECT CAST(r.day - DATE '1970-01-01' AS INTEGER), CAST(r.source_key * ${int(currencies.length)} + c.i AS INTEGER),
        ${join(SUMS.map((c) => sql`CAST(coalesce(${ident(c)}, 0) AS DOUBLE)`))}, CAST(epoch_us(r.first_at) AS DOUBLE), CAST(epoch_us(r.last_at) AS DOUBLE)
      FROM ${reportDay} r JOIN (SELECT currency, row_number() OVER (ORDER BY currency) - 1 AS i FROM (SELECT DISTINCT currency FROM ${reportDay})) c USING (currency)
      ORDER BY r.source_key, c.i, r.day`);
    const contacts = await db.numberColumns(sql`SELECT CAST(day - DATE '1970-01-01' AS INTEGER), CAST(source_key AS INTEGER),
        CAST(coalesce(prev_day, DATE '0001-01-01') - DATE '1970-01-01' AS INTEGER) FROM ${relation('contact_day')} ORDER BY day`);
    const [contactDays, contactKeys, previousDays] = contacts.map((c) => Int32Array.from(c));
    const days = Int32Array.from(dayColumn!);
    const { starts, rows } = runningTotals(cells!, rest, byKey.length * currencies.length);
    const [firstDays, lastDays] = cellDays(starts, days);
    return new DaySums(starts, days, firstDays, lastDays, dayIndex(starts, days, dayIndexEntries), rows, contactDays!, contactKeys!, previousDays!, currencies, byKey);
  }

  /** The bytes these arrays hold in Node's memory (what a plugin file's memory budget counts beside DuckDB's). */
  get bytes(): number {
    const arrays = [this.starts, this.days, this.firstDays, this.lastDays, this.rows, this.contactDays, this.contactKeys, this.previousDays, this.through?.offsets, this.through?.rows];
    const { scratch } = this;
    const scratches = scratch ? [scratch.sums, scratch.first, scratch.last, scratch.seen, scratch.lo, scratch.hi, scratch.unique] : [];
    return [...arrays, ...scratches].reduce((n, a) => n + (a?.byteLength ?? 0), 0);
  }

  /** The report's rows of the period (every source with a per-day row in it), sorted as the query asks and paged; totalCount all of them. */
  page(query: ReportQuery, referenceCurrency: string): { rows: Record<string, unknown>[]; totalCount: number } {
    const from = dayNumber(query.dateFrom);
    const period = this.sumsOf(from, dayNumber(query.dateTo));
    const unique = this.uniqueContacts(from, dayNumber(query.dateTo));
    const rows: Record<string, unknown>[] = [];
    for (let key = 0; key < this.sources.length; key++) {
      const row = this.figures(key, period, unique[key] ?? 0, referenceCurrency);
      if (row) rows.push(row);
    }
    const sorted = sortRows(rows, query.sort, REPORT_TIE_BREAK);
    const page = sorted.slice(query.offset, query.offset + query.limit);
    // the page's rows written out: their times, and their breakdowns
    const rowsOf = page.map((row) => ({
      ...row,
      firstConversionAt: timestamp(row.firstConversionAt),
      lastConversionAt: timestamp(row.lastConversionAt),
      breakdown: this.breakdown(row.source_key as number, period),
    }));
    return { rows: rowsOf, totalCount: sorted.length };
  }

  /** The scratch arrays (see scratch), made on the first page. */
  private scratchArrays(): NonNullable<DaySums['scratch']> {
    const cellCount = this.starts.length - 1;
    return (this.scratch ??= {
      sums: new Float64Array(cellCount * S),
      first: new Float64Array(cellCount),
      last: new Float64Array(cellCount),
      seen: new Uint8Array(cellCount),
      lo: new Int32Array(cellCount),
      hi: new Int32Array(cellCount),
      unique: new Int32Array(this.sources.length),
    });
  }

  /**
   * Each cell's sums over the period's days (PER_CURRENCY_FROM_DAYS): the running totals at its
   * last day in the period less those before its first; the first and last conversion those of
   * the first and last of its days in the period that have one. Only the cells seen hold figures.
   * In two passes: every cell's rows in the period first, then their figures, so that the memory
   * reads of one cell do not wait on those of the one before (a third faster on 2,500 cells).
   */
  private sumsOf(from: number, to: number): PeriodSums {
    const period = this.scratchArrays();
    const { lo, hi, sums, first, last, seen } = period;
    const { starts, firstDays, lastDays, rows } = this;
    const cellCount = starts.length - 1;
    for (let cell = 0; cell < cellCount; cell++) {
      const start = starts[cell]!;
      const end = starts[cell + 1]!;
      if (start === end || firstDays[cell]! > to || lastDays[cell]! < from) {
        lo[cell] = 1;
        hi[cell] = 0;
        continue;
      }
      lo[cell] = from <= firstDays[cell]! ? start : this.rowsAfter(cell, from - 1);
      hi[cell] = (to >= lastDays[cell]! ? end : this.rowsAfter(cell, to)) - 1;
    }
    seen.fill(0);
    for (let cell = 0; cell < cellCount; cell++) {
      const l = lo[cell]!;
      const h = hi[cell]!;
      if (l > h) continue;
      seen[cell] = 1;
      const a = cell * S;
      const at = h * ROW;
      const before = (l - 1) * ROW;
      if (l > starts[cell]!) for (let k = 0; k < S; k++) sums[a + k] = rows[at + k]! - rows[before + k]!;
      else for (let k = 0; k < S; k++) sums[a + k] = rows[at + k]!;
      let f = NaN;
      for (let i = l; i <= h && Number.isNaN(f); i++) f = rows[i * ROW + FIRST]!;
      first[cell] = f;
      let t = NaN;
      for (let i = h; i >= l && Number.isNaN(t); i--) t = rows[i * ROW + LAST]!;
      last[cell] = t;
    }
    return period;
  }

  /** Where a cell's rows of days after `day` start, for a day from its first to before its last. */
  private rowsAfter(cell: number, day: number): number {
    const index = this.through;
    const start = this.starts[cell]!;
    return index ? index.rows[index.offsets[cell]! + day - this.firstDays[cell]!]! : firstAtOrAfter(this.days, day + 1, start, this.starts[cell + 1]!);
  }

  /**
   * Per source key: the contacts whose first conversion day through it in the period lies in it
   * (contact_day with prev_day before the period), counted without a branch: a branch that goes
   * either way at random cost four times as much on a month of 95,000 rows.
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

  /** A source's row without its breakdown, its times in milliseconds: its columns and the figures in the reference currency (PERIOD_FIGURES); undefined when it has no day in the period. */
  private figures(key: number, period: PeriodSums, uc: number, referenceCurrency: string): Record<string, unknown> | undefined {
    const source = this.sources[key];
    if (!source) return undefined;
    let seen = false;
    let [n, wo, w, rn, rwo, rw, first, last] = [0, 0, 0, 0, 0, 0, NaN, NaN];
    for (let c = 0, cell = key * this.currencies.length; c < this.currencies.length; c++, cell++) {
      if (!period.seen[cell]) continue;
      seen = true;
      const a = cell * S;
      n += period.sums[a + N]!;
      rn += period.sums[a + RN]!;
      wo += period.sums[a + REF_WO]!;
      w += period.sums[a + REF_W]!;
      rwo += period.sums[a + REF_RWO]!;
      rw += period.sums[a + REF_RW]!;
      if (!(period.first[cell]! >= first)) first = Number.isNaN(period.first[cell]!) ? first : period.first[cell]!;
      if (!(period.last[cell]! <= last)) last = Number.isNaN(period.last[cell]!) ? last : period.last[cell]!;
    }
    if (!seen) return undefined;
    return {
      source_key: key,
      ...source,
      firstConversionAt: millis(first),
      lastConversionAt: millis(last),
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

  /** A source's breakdown per order currency, in currency order (PER_SOURCE's structs, field by field). */
  private breakdown(key: number, period: PeriodSums): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (let c = 0, cell = key * this.currencies.length; c < this.currencies.length; c++, cell++) {
      if (!period.seen[cell]) continue;
      const s = period.sums.subarray(cell * S, cell * S + S);
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

/** Whether report_day fits the arrays: each column's magnitudes below BOUND (in doubles: HUGEINT arithmetic is slow), no NULL key, times in years 1970 to 9998. */
async function fits(db: Database, reportDay: Sql): Promise<boolean> {
  const tenThousandths = (c: (typeof SUMS)[number]) => (c === 'n' || c === 'rn' ? sql`CAST(${ident(c)} AS DOUBLE)` : sql`CAST(${ident(c)} AS DOUBLE) * 10000`);
  const row = await db.one<{ fits: boolean }>(sql`SELECT ${join(SUMS.map((c) => sql`coalesce(sum(abs(${tenThousandths(c)})) < ${BOUND}, true)`), sql` AND `)}
      AND count(*) FILTER (WHERE currency IS NULL OR source_key IS NULL OR source_key < 0) = 0
      AND coalesce(min(first_at) >= TIMESTAMP '1970-01-01', true) AND coalesce(max(last_at) < TIMESTAMP '9999-01-01', true) AS fits
    FROM ${reportDay}`);
  return row?.fits === true;
}

/**
 * Where each cell's rows start (rows sorted by cell), and each row's ROW numbers: the SUMS added
 * up from its cell's first row, as whole numbers (counts as read; amounts from DuckDB's doubles
 * back to whole ten-thousandths, exact below BOUND, as every running total is), then its first and
 * last conversion as read (columns: the SUMS, first, last).
 */
function runningTotals(cells: Float64Array, columns: Float64Array[], cellCount: number): { starts: Int32Array; rows: Float64Array } {
  const count = cells.length;
  const starts = new Int32Array(cellCount + 1);
  for (let i = 0; i < count; i++) starts[cells[i]! + 1]!++;
  for (let c = 0; c < cellCount; c++) starts[c + 1]! += starts[c]!;
  const rows = new Float64Array(count * ROW);
  for (let k = 0; k < S; k++) {
    const scale = k === N || k === RN ? 1 : 10_000;
    const column = columns[k]!;
    for (let i = 0; i < count; i++) {
      const value = Math.round(column[i]! * scale);
      rows[i * ROW + k] = i > 0 && cells[i] === cells[i - 1] ? rows[(i - 1) * ROW + k]! + value : value;
    }
  }
  for (let i = 0; i < count; i++) {
    rows[i * ROW + FIRST] = columns[S]![i]!;
    rows[i * ROW + LAST] = columns[S + 1]![i]!;
  }
  return { starts, rows };
}

/** Per cell (rows sorted by cell, then day): its first and last day, 0 when it has no row. */
function cellDays(starts: Int32Array, days: Int32Array): [Int32Array, Int32Array] {
  const cellCount = starts.length - 1;
  const [firstDays, lastDays] = [new Int32Array(cellCount), new Int32Array(cellCount)];
  for (let c = 0; c < cellCount; c++) {
    if (starts[c] === starts[c + 1]) continue;
    firstDays[c] = days[starts[c]!]!;
    lastDays[c] = days[starts[c + 1]! - 1]!;
  }
  return [firstDays, lastDays];
}

/** Per cell, for each day from its first to its last: where its rows of later days start. */
interface DayIndex {
  offsets: Int32Array;
  rows: Int32Array;
}

/** At most this many entries in a DayIndex (16 MB); beyond, binary searches find the days. */
const DAY_INDEX_LIMIT = 4_000_000;

/** The DayIndex of cells whose rows are in day order (undefined past `limit` entries, DAY_INDEX_LIMIT by default: cells spanning many years). */
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
