/**
 * The attributed transactions of a served scope held in JavaScript by order id: a look-up of an
 * order's records over a period of UTC days that filters nothing else (backend.ts, items) is
 * answered here instead of planned and run by DuckDB on every request. The rows are the ones
 * `itemsSelect` gives (queries.ts): the same columns and values (the amounts as DuckDB casts them
 * to doubles, read so at load; the times as strftime '%Y-%m-%dT%H:%M:%S.%gZ' writes them; hours
 * the centi-hours divided by 100 as a double), then sorted and paged as the SQL's fewRows way.
 *
 * Compact, not one object per row: numbers in typed arrays, the order ids (sorted by their UTF-8
 * bytes, as DuckDB compares VARCHAR, for a binary search) and the contacts' texts in one buffer of
 * UTF-8 each, decoded on demand; currencies and countries as small numbers into a list, sources
 * as a key into their rows. Loaded only where every transaction has its order, contact, times,
 * source and currency, where its times lie in years 1970 to 9998 (whole milliseconds since 1970,
 * one day a UTC day), where a contact id names one contact and a source one source row, and where
 * there are at most 255 currencies and 65,535 countries: otherwise the scope keeps the SQL way.
 */
import { utcDayNumber } from '../model/period.js';
import type { Period } from '../model/types.js';
import type { Database } from './db.js';
import { activityUrlOf } from './models/links.js';
import { compareText } from './queries.js';
import { ident, join, sql, type Sql } from './sql.js';

const DAY_MS = 86_400_000;

/** A source's columns as the items' SQL names them, in its order. */
const SOURCE_COLUMNS = ['source_type', 'source_id', 'name', 'campaign_id', 'smartflow_id', 'smartflow_name', 'delivery_id', 'delivery_name'] as const;
type SourceRow = Record<(typeof SOURCE_COLUMNS)[number], string | null>;

/** Texts as one buffer of UTF-8: the i-th is bytes [ends[i - 1], ends[i]) (ends[-1]: 0), or null where nulls[i] is 1. */
class Texts {
  constructor(
    private readonly utf8: Buffer,
    private readonly ends: Uint32Array,
    private readonly nulls: Uint8Array,
  ) {}

  get length(): number {
    return this.ends.length;
  }

  get(i: number): string | null {
    return this.nulls[i] ? null : this.utf8.toString('utf8', i > 0 ? this.ends[i - 1]! : 0, this.ends[i]!);
  }

  /** The i-th text's bytes compared with key's (Buffer.compare's sign: below 0 when the text sorts first). */
  compare(i: number, key: Buffer): number {
    return this.utf8.compare(key, 0, key.length, i > 0 ? this.ends[i - 1]! : 0, this.ends[i]!);
  }

  get bytes(): number {
    return this.utf8.byteLength + this.ends.byteLength + this.nulls.byteLength;
  }
}

/** Texts made a chunk at a time, the buffers grown as they fill and cut to size at the end. */
class TextsBuilder {
  private utf8 = Buffer.allocUnsafeSlow(1 << 16);
  private used = 0;
  private ends = new Uint32Array(1024);
  private nulls = new Uint8Array(1024);
  count = 0;

  /** Adds texts in order, their UTF-8 written at once (a null: nothing written, marked null). */
  addAll(texts: readonly (string | null)[]): void {
    const n = texts.length;
    if (this.count + n > this.ends.length) {
      const length = Math.max(2 * this.ends.length, this.count + n);
      this.ends = grownTo(this.ends, new Uint32Array(length));
      this.nulls = grownTo(this.nulls, new Uint8Array(length));
    }
    // join writes null as nothing
    const joined = texts.join('');
    const size = Buffer.byteLength(joined, 'utf8');
    // past 4 GiB of text the ends would wrap: no index, the SQL way
    if (this.used + size >= 2 ** 32) throw new NotMade();
    if (this.used + size > this.utf8.length) this.utf8 = grownTo(this.utf8, Buffer.allocUnsafeSlow(Math.max(2 * this.utf8.length, this.used + size)));
    this.utf8.write(joined, this.used, 'utf8');
    // ASCII throughout: a text's bytes are its length
    const ascii = size === joined.length;
    for (let i = 0, end = this.used; i < n; i++) {
      const text = texts[i];
      end += text === null || text === undefined ? 0 : ascii ? text.length : Buffer.byteLength(text, 'utf8');
      this.ends[this.count] = end;
      this.nulls[this.count++] = text === null ? 1 : 0;
    }
    this.used += size;
  }

  done(): Texts {
    const utf8 = Buffer.allocUnsafeSlow(this.used);
    this.utf8.copy(utf8, 0, 0, this.used);
    return new Texts(utf8, this.ends.slice(0, this.count), this.nulls.slice(0, this.count));
  }
}

/** Why the index is not made: a value the arrays cannot hold, or a load stopped. */
class NotMade extends Error {}

/** A typed array (or buffer) copied into the start of a longer one, which is returned. */
function grownTo<T extends Uint8Array | Uint32Array | Float64Array | Int32Array | Uint16Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}

/** The transactions by order id, in the order (order id bytes, row_id): an order's rows are a run, its rows' positions their row_id order. */
interface Rows {
  /** Per order, where its rows start (orders + 1 entries). */
  starts: Uint32Array;
  /** Milliseconds since 1970 of the transaction and of its touch. */
  times: Float64Array;
  touches: Float64Array;
  /** CAST(amount_w_tax AS DOUBLE) and CAST(ref_w AS DOUBLE), NaN for NULL. */
  amounts: Float64Array;
  references: Float64Array;
  centiHours: Int32Array;
  refunds: Uint8Array;
  /** The index of its currency; of its country + 1 (0: NULL). */
  currencies: Uint8Array;
  countries: Uint16Array;
  sources: Uint32Array;
  contacts: Uint32Array;
}

/** The columns of a contact: contact_id, client_contact_id, first_name, surname. */
type Contacts = [Texts, Texts, Texts, Texts];

export class OrderIndex {
  private constructor(
    private readonly orderIds: Texts,
    private readonly rows: Rows,
    private readonly contacts: Contacts,
    private readonly sources: SourceRow[],
    private readonly currencies: string[],
    private readonly countries: string[],
  ) {}

  /**
   * The scope's conv read into the arrays; undefined where a value does not fit (see above), or
   * once `stopped` says so (checked between the statements and the chunks read: a server retiring
   * the data, which also interrupts the statement running).
   */
  static async load(db: Database, conv: Sql, stopped: () => boolean = () => false): Promise<OrderIndex | undefined> {
    const count = stopped() ? undefined : await rowsThatFit(db, conv);
    if (count === undefined) return undefined;
    const go = () => {
      if (stopped()) throw new NotMade();
    };
    try {
      for (const [name, select] of Object.entries(NUMBERED)) {
        go();
        await db.exec(sql`CREATE OR REPLACE TEMP TABLE ${temporary(name)} AS ${select(conv)}`);
      }
      const sources = await db.all<SourceRow>(sql`SELECT ${join(SOURCE_COLUMNS.map((c) => ident(c)))} FROM ${temporary('sources')} ORDER BY k`);
      const contacts = await readContacts(db);
      const values = async (name: string) => (await db.all<{ v: string }>(sql`SELECT v FROM ${temporary(name)} ORDER BY k`)).map((r) => r.v);
      const [currencies, countries] = [await values('currencies'), await values('countries')];
      const orders = await readOrders(db, conv, count, go);
      const rows = orders && (await readRows(db, conv, count, orders, go));
      return rows && new OrderIndex(orders.orderIds, rows, contacts, sources, currencies, countries);
    } catch (error) {
      if (error instanceof NotMade) return undefined;
      throw error;
    } finally {
      for (const name of Object.keys(NUMBERED)) await db.exec(sql`DROP TABLE IF EXISTS ${temporary(name)}`);
    }
  }

  /** The bytes these arrays hold in Node's memory (what a plugin file's memory budget counts beside DuckDB's). */
  get bytes(): number {
    const arrays = Object.values(this.rows) as ArrayBufferView[];
    return this.orderIds.bytes + this.contacts.reduce((n, t) => n + t.bytes, 0) + arrays.reduce((n, a) => n + a.byteLength, 0);
  }

  /** The order's position among the order ids, -1 when none is it. */
  private find(orderId: string): number {
    const key = Buffer.from(orderId, 'utf8');
    let lo = 0;
    let hi = this.orderIds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.orderIds.compare(mid, key);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  /**
   * The rows itemsSelect gives for the order in the period (none when the order has no transaction
   * in it); undefined where one lacks its reference amount (the SQL way says which rates are
   * missing). activityUrl: with that column too (a sort by it).
   */
  rowsOf(orderId: string, period: Period, referenceCurrency: string, activityUrl = false): Record<string, unknown>[] | undefined {
    const order = this.find(orderId);
    if (order < 0) return [];
    const { starts, times, references } = this.rows;
    const from = utcDayNumber(period.dateFrom);
    const to = utcDayNumber(period.dateTo);
    const out: Record<string, unknown>[] = [];
    // the id as stored (an id asked with a lone surrogate finds the one with U+FFFD), decoded once
    let stored: string | undefined;
    for (let i = starts[order]!; i < starts[order + 1]!; i++) {
      const day = Math.floor(times[i]! / DAY_MS);
      if (day < from || day > to) continue;
      if (Number.isNaN(references[i]!)) return undefined;
      out.push(this.row(i, (stored ??= this.orderIds.get(order)!), referenceCurrency, activityUrl));
    }
    return out;
  }

  /** The i-th transaction as itemsSelect's row (without the exact columns only the text lines read). */
  private row(i: number, orderId: string, referenceCurrency: string, activityUrl: boolean): Record<string, unknown> {
    const r = this.rows;
    const contact = r.contacts[i]!;
    const source = this.sources[r.sources[i]!]!;
    const row: Record<string, unknown> = {
      row_id: i,
      contactId: this.contacts[0].get(contact),
      clientContactId: this.contacts[1].get(contact),
      datetime: timestamp(r.times[i]!),
      orderId,
      firstName: this.contacts[2].get(contact),
      surname: this.contacts[3].get(contact),
      conversionsAmount: nullable(r.amounts[i]!),
      conversionsCurrency: this.currencies[r.currencies[i]!]!,
      conversionsReferenceAmount: nullable(r.references[i]!),
      referenceCurrency,
      country: r.countries[i] ? this.countries[r.countries[i]! - 1]! : null,
      isRefund: r.refunds[i] === 1,
      touch_datetime: timestamp(r.touches[i]!),
      hours: r.centiHours[i]! / 100,
      ...source,
    };
    if (activityUrl) row.activityUrl = activityUrlOf({ ...source, contact_id: row.contactId });
    return row;
  }
}

/** Milliseconds since 1970 as strftime '%Y-%m-%dT%H:%M:%S.%gZ' writes the TIMESTAMP (years 1970 to 9998). */
const timestamp = (ms: number): string => new Date(ms).toISOString();
const nullable = (value: number): number | null => (Number.isNaN(value) ? null : value);

/** How many rows conv holds where each fits the arrays (see the module's comment); undefined where one does not. */
async function rowsThatFit(db: Database, conv: Sql): Promise<number | undefined> {
  const row = await db.one<{ fits: boolean; n: number }>(sql`SELECT CAST(count(*) AS DOUBLE) AS n,
      count(*) FILTER (WHERE row_id IS NULL OR order_id IS NULL OR contact_id IS NULL OR datetime IS NULL OR touch_datetime IS NULL OR centi_hours IS NULL
        OR is_refund IS NULL OR currency IS NULL OR source_type IS NULL OR source_id IS NULL OR day IS DISTINCT FROM CAST(datetime AS DATE)) = 0
      AND coalesce(least(min(datetime), min(touch_datetime)) >= TIMESTAMP '1970-01-01' AND greatest(max(datetime), max(touch_datetime)) < TIMESTAMP '9999-01-01', true)
      AND coalesce(min(centi_hours) >= -2147483648 AND max(centi_hours) <= 2147483647, true)
      AND count(DISTINCT currency) <= 255 AND count(DISTINCT country) <= 65535 AS fits
    FROM ${conv}`);
  return row?.fits === true && row.n < 2 ** 30 ? row.n : undefined;
}

/**
 * The values the rows are keyed to, each numbered from 0 (k) in a temporary table of the
 * connection while the index loads, so that the rows are joined to the same numbers as the values
 * are read with (and the joins are planned on their true sizes): conv's sources in (source_type,
 * source_id) order, its contacts, currencies and countries but NULL. A source or contact id of two
 * rows would join a row twice: readRows then reads more rows than conv holds, and no index is made.
 */
const NUMBERED: Record<string, (conv: Sql) => Sql> = {
  sources: (conv) => sql`SELECT *, CAST(row_number() OVER (ORDER BY source_type, source_id) - 1 AS INTEGER) AS k
    FROM (SELECT DISTINCT ${join(SOURCE_COLUMNS.map((c) => ident(c)))} FROM ${conv})`,
  contacts: (conv) => sql`SELECT *, CAST(row_number() OVER () - 1 AS INTEGER) AS k FROM (SELECT DISTINCT contact_id, client_contact_id, first_name, surname FROM ${conv})`,
  currencies: (conv) => sql`SELECT currency AS v, CAST(row_number() OVER (ORDER BY currency) - 1 AS INTEGER) AS k FROM (SELECT DISTINCT currency FROM ${conv})`,
  countries: (conv) => sql`SELECT country AS v, CAST(row_number() OVER (ORDER BY country) - 1 AS INTEGER) AS k FROM (SELECT DISTINCT country FROM ${conv} WHERE country IS NOT NULL)`,
};

const temporary = (name: string) => sql`${ident('temp')}.${ident(`convx_order_index_${name}`)}`;

/** conv's contacts by their number (NUMBERED). */
async function readContacts(db: Database): Promise<Contacts> {
  const columns = [new TextsBuilder(), new TextsBuilder(), new TextsBuilder(), new TextsBuilder()];
  for await (const chunk of db.columnChunks(sql`SELECT contact_id, client_contact_id, first_name, surname FROM ${temporary('contacts')} ORDER BY k`)) {
    for (let c = 0; c < 4; c++) columns[c]!.addAll(chunk[c] as (string | null)[]);
  }
  return columns.map((b) => b.done()) as Contacts;
}

/**
 * The keys of each row (NUMBERED): its source's and its contact's number, and in one number
 * whether it is a refund (1), its currency's (times 2) and its country's + 1 (times 512; 0: none).
 */
const KEYS = sql`
  JOIN ${temporary('sources')} s USING (source_type, source_id)
  JOIN ${temporary('contacts')} k USING (contact_id)
  JOIN ${temporary('currencies')} cur ON cur.v = c.currency
  LEFT JOIN ${temporary('countries')} co ON co.v = c.country`;

/** The columns of readRows' query, a chunk's values each. */
type RowColumns = [number[], number[], number[], (number | null)[], (number | null)[], number[], number[], number[], number[]];

/**
 * conv's rows into the arrays, each at its place in order id and row_id order (readOrders: read
 * in conv's own order, not sorted, which held some 180 MB more at once on a shop of a million
 * rows); undefined where they are not `count` rows, each of its row_id once.
 */
async function readRows(db: Database, conv: Sql, count: number, { starts, places }: { starts: Uint32Array; places: Places }, go: () => void): Promise<Rows | undefined> {
  const rows: Rows = {
    starts,
    times: new Float64Array(count),
    touches: new Float64Array(count),
    amounts: new Float64Array(count),
    references: new Float64Array(count),
    centiHours: new Int32Array(count),
    refunds: new Uint8Array(count),
    currencies: new Uint8Array(count),
    countries: new Uint16Array(count),
    sources: new Uint32Array(count),
    contacts: new Uint32Array(count),
  };
  let read = 0;
  for await (const chunk of db.columnChunks(sql`SELECT CAST(c.row_id AS DOUBLE), CAST(epoch_ms(c.datetime) AS DOUBLE), CAST(epoch_ms(c.touch_datetime) AS DOUBLE),
      CAST(c.amount_w_tax AS DOUBLE), CAST(c.ref_w AS DOUBLE), CAST(c.centi_hours AS INTEGER), s.k, k.k,
      CAST(c.is_refund AS INTEGER) + 2 * cur.k + 512 * coalesce(co.k + 1, 0)
    FROM ${conv} c ${KEYS}`)) {
    go();
    const [rowIds, times, touches, amounts, references, centiHours, sources, contacts, packed] = chunk as RowColumns;
    read += rowIds.length;
    for (let i = 0; i < rowIds.length; i++) {
      const at = places.get(rowIds[i]!);
      if (at < 0) return undefined;
      rows.times[at] = times[i]!;
      rows.touches[at] = touches[i]!;
      rows.amounts[at] = amounts[i] ?? NaN;
      rows.references[at] = references[i] ?? NaN;
      rows.centiHours[at] = centiHours[i]!;
      rows.sources[at] = sources[i]!;
      rows.contacts[at] = contacts[i]!;
      rows.refunds[at] = packed[i]! & 1;
      rows.currencies[at] = (packed[i]! >> 1) & 255;
      rows.countries[at] = packed[i]! >>> 9;
    }
  }
  return read === count ? rows : undefined;
}

/**
 * conv's order ids in order, where each one's rows start in that order, and each row's place in
 * it by its row_id; undefined where the ids do not come in their code points' (UTF-8 bytes')
 * order, which the binary search needs, or a row_id comes twice.
 */
async function readOrders(db: Database, conv: Sql, count: number, go: () => void): Promise<{ orderIds: Texts; starts: Uint32Array; places: Places } | undefined> {
  const orderIds = new TextsBuilder();
  const places = new Places(count);
  let starts = new Uint32Array(1024);
  let at = 0;
  let previous: string | undefined;
  // every row's id, not each id once: grouped under a collation, ids of other bytes would be one
  for await (const chunk of db.columnChunks(sql`SELECT order_id, CAST(row_id AS DOUBLE) FROM ${conv} ORDER BY order_id, row_id`)) {
    go();
    const [ids, rowIds] = chunk as [string[], number[]];
    // (more rows than counted would fill the table of places)
    if (at + ids.length > count) return undefined;
    if (orderIds.count + ids.length >= starts.length) starts = grownTo(starts, new Uint32Array(Math.max(2 * starts.length, orderIds.count + ids.length + 1)));
    const fresh: string[] = [];
    for (let i = 0; i < ids.length; i++, at++) {
      if (!places.set(rowIds[i]!, at)) return undefined;
      if (ids[i] === previous) continue;
      if (previous !== undefined && compareText(previous, ids[i]!) >= 0) return undefined;
      previous = ids[i]!;
      starts[orderIds.count + fresh.length] = at;
      fresh.push(previous);
    }
    orderIds.addAll(fresh);
  }
  starts[orderIds.count] = at;
  return at === count ? { orderIds: orderIds.done(), starts: starts.slice(0, orderIds.count + 1), places } : undefined;
}

/** Row ids (whole numbers below 2^53) to places: an open-addressing table of about 20 bytes a row, while the index loads. */
class Places {
  private readonly keys: Float64Array;
  private readonly places: Uint32Array;
  private readonly shift: number;

  constructor(size: number) {
    let bits = 4;
    while (2 ** bits < 1.5 * size) bits++;
    this.keys = new Float64Array(2 ** bits).fill(NaN);
    this.places = new Uint32Array(2 ** bits);
    this.shift = 32 - bits;
  }

  /** Where the row id's slot is: its own, else the first free one from its hash on. */
  private slot(rowId: number): number {
    const mixed = Math.imul((rowId >>> 0) ^ Math.imul((rowId / 2 ** 32) | 0, 0x85ebca6b), 0x9e3779b1);
    const mask = this.keys.length - 1;
    let at = mixed >>> this.shift;
    while (!Number.isNaN(this.keys[at]!) && this.keys[at] !== rowId) at = (at + 1) & mask;
    return at;
  }

  /** False where the row id has a place already. */
  set(rowId: number, place: number): boolean {
    const at = this.slot(rowId);
    if (this.keys[at] === rowId) return false;
    this.keys[at] = rowId;
    this.places[at] = place;
    return true;
  }

  /** The row id's place, -1 when it has none. */
  get(rowId: number): number {
    const at = this.slot(rowId);
    return this.keys[at] === rowId ? this.places[at]! : -1;
  }
}
