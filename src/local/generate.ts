/**
 * `convx data generate`: a deterministic dataset of any size, generated in
 * DuckDB from hashes of (seed, table, row), so the same flags give the same files.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import { alive } from '../pid.js';
import { Database } from './db.js';
import { EMPTY, ident, int, join as joinSql, list, literal, sql, trusted, type Sql } from './sql.js';
import { stagedUntilExit } from './staging.js';

export interface GenerateOptions {
  out: string;
  seed: number;
  contacts: number;
  orders: number;
  touches: number;
  /** Inclusive dates (YYYY-MM-DD) of the orders. */
  from: string;
  to: string;
  format: 'csv' | 'parquet';
  plugins: number;
  /** Sources of every plugin (16 by default: the named ones; more are campaigns "Campaign N"). */
  sources?: number;
  /** Currencies of the orders, the first N of `CURRENCIES` (4 by default; at least 2). */
  currencies?: number;
  force?: boolean;
  /** DuckDB threads (CONVX_THREADS); by default one per core. */
  threads?: number;
}

export interface GenerateResult {
  out: string;
  files: { table: string; file: string; rows: number }[];
}

/**
 * The currencies of the orders and their value in euros: SQL decimal constants, spliced as the code
 * spells them; `--currencies N` takes the first N (4 by default, EUR and CZK being the reference ones).
 */
const CURRENCIES = [
  ['EUR', '1'], ['CZK', '0.04'], ['USD', '0.92'], ['PLN', '0.23'],
  ['GBP', '1.17'], ['HUF', '0.0025'], ['CHF', '1.05'], ['SEK', '0.088'],
] as const;
type Currency = (typeof CURRENCIES)[number];
export const MAX_CURRENCIES = CURRENCIES.length;
/** The named sources of every plugin (`sourceListTable`); `--sources` more are campaigns. */
const NAMED_SOURCES = 16;

const currenciesOf = (o: GenerateOptions): readonly Currency[] => CURRENCIES.slice(0, o.currencies ?? 4);
const sourcesOf = (o: GenerateOptions): number => o.sources ?? NAMED_SOURCES;

export async function generateDataset(options: GenerateOptions): Promise<GenerateResult> {
  const { out } = options;
  if (existsSync(out) && readdirSync(out).length > 0 && !options.force) {
    throw new UsageError(`${out} exists and is not empty; choose another --out or pass --force to replace it`);
  }
  const staging = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  removeAbandoned(out);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // Ctrl-C or SIGTERM (bin/convx.js exits with 130 or 143) removes it too.
  const pending = stagedUntilExit(staging);
  const db = await Database.open(':memory:', { ...(options.threads ? { threads: options.threads } : {}), reuse: true });
  try {
    const files = await writeTables(db, staging, options);
    rmSync(out, { recursive: true, force: true });
    renameSync(staging, out);
    return { out, files: files.map((f) => ({ ...f, file: join(out, basename(f.file)) })) };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  } finally {
    pending.done();
    db.close();
  }
}

/**
 * The staging folders of earlier runs into out whose process is gone (.OUT.tmp-PID): a run killed
 * (SIGKILL, a machine that stopped) leaves its own, which Ctrl-C and SIGTERM remove.
 */
function removeAbandoned(out: string): void {
  const prefix = `.${basename(out)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dirname(out));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = name.startsWith(prefix) && /^\d{1,7}$/.test(name.slice(prefix.length)) ? Number(name.slice(prefix.length)) : 0;
    if (pid && pid !== process.pid && !alive(pid)) rmSync(join(dirname(out), name), { recursive: true, force: true });
  }
}

/** The tables, built in this order (each may read those before it), then written as files. */
async function writeTables(db: Database, dir: string, o: GenerateOptions): Promise<{ table: string; file: string; rows: number }[]> {
  for (const statement of macros(o)) await db.exec(statement);
  for (const build of [pluginsTable, contactsTable, sourceListTable, sourcesTable, touchesTable, orderRowsTable, ordersTable]) {
    await db.exec(build(o));
  }
  const refs = (await db.all<{ r: string }>(sql`SELECT DISTINCT reference_currency AS r FROM plugins ORDER BY 1`)).map((r) => r.r);
  await db.exec(fxTable(refs, currenciesOf(o)));
  await db.exec(assetsTable());
  return exportTables(db, dir, o.format);
}

/** u(key, i): a uniform number in [0, 1) that depends only on the seed, a key and a row number; pick; the period's bounds. */
function macros(o: GenerateOptions): Sql[] {
  return [
    // A macro takes no parameter: the seed is a whole number spliced as text.
    sql`CREATE MACRO u(k, i) AS CAST(hash(${int(Math.trunc(o.seed))}, k, i) % 1000003 AS DOUBLE) / 1000003`,
    sql`CREATE MACRO pick(list, x) AS list[1 + CAST(floor(x * len(list)) AS INTEGER)]`,
    sql`SET VARIABLE day_from = DATE ${literal(o.from)}`,
    sql`SET VARIABLE day_to = DATE ${literal(o.to)}`,
  ];
}

/** The plugin_id column of a row whose contact number is `contact` (none with a single plugin). */
function pluginColumn(o: GenerateOptions, contact: Sql): Sql {
  return o.plugins > 1 ? sql`'shop-' || (1 + ${contact} % ${int(o.plugins)}) AS plugin_id,` : EMPTY;
}

function pluginsTable(o: GenerateOptions): Sql {
  const multi = o.plugins > 1;
  return sql`
    CREATE TABLE plugins AS
    SELECT ${multi ? sql`'shop-' || i` : sql`'shop'`} AS plugin_id,
           CASE WHEN i % 2 = 1 THEN 'EUR' ELSE 'CZK' END AS reference_currency,
           ${multi ? sql`'Shop ' || i` : sql`'Sample shop'`} AS name
    FROM range(1, ${int(o.plugins + 1)}) t(i)`;
}

function contactsTable(o: GenerateOptions): Sql {
  return sql`
    CREATE TABLE contacts AS
    WITH base AS (
      SELECT i,
        pick(['Jana','Petr','Eva','Tomas','Lucie','Martin','Anna','Jakub','Sarah','Lukas','Marie','Jan','Ewa','Piotr','Greta','Felix'], u('fn', i)) AS first_name,
        pick(['Novak','Svoboda','Dvorak','Kovac','Horvath','Muller','Schmidt','Nowak','Smith','Cerny','Prochazka','Kral'], u('sn', i)) AS surname,
        pick(['CZ','CZ','CZ','SK','SK','DE','AT','PL'], u('co', i)) AS country,
        u('em', i) AS em, u('cs', i) AS cs, u('un', i) AS un
      FROM range(1, ${int(o.contacts + 1)}) t(i))
    SELECT ${pluginColumn(o, sql`i`)}
      'c-' || i AS contact_id,
      'CL' || lpad(CAST(i AS VARCHAR), 7, '0') AS client_contact_id,
      CASE WHEN em < 0.01 THEN NULL
           WHEN em < 0.025 THEN lower(first_name) || '.' || lower(surname) || '.example.com'
           ELSE lower(first_name) || '.' || lower(surname) || i || '@example.com' END AS email,
      first_name, surname,
      CASE country WHEN 'CZ' THEN 'cs' WHEN 'SK' THEN (CASE WHEN em > 0.7 THEN 'cs' ELSE 'sk' END)
                   WHEN 'DE' THEN 'de' WHEN 'AT' THEN 'de' ELSE (CASE WHEN em > 0.5 THEN 'en' ELSE 'pl' END) END AS language,
      country,
      cs >= 0.08 AS consent,
      un < 0.04 AS unsubscribed,
      'l-' || (1 + CAST(floor(u('l1', i) * 3) AS INTEGER)) || CASE WHEN u('l2', i) < 0.4 THEN ';l-4' ELSE '' END AS lists
    FROM base`;
}

/**
 * The sources of every plugin, numbered k (a touch picks one by k): the sixteen named ones, the
 * first `--sources` of them when fewer, and campaigns k-9, k-10, ... when more.
 */
function sourceListTable(o: GenerateOptions): Sql {
  const n = sourcesOf(o);
  const fewer = n < NAMED_SOURCES ? sql` WHERE k <= ${int(n)}` : EMPTY;
  const more =
    n > NAMED_SOURCES
      ? sql`
    UNION ALL
    SELECT CAST(k AS INTEGER), 'campaign', 'k-' || (k - 8), 'Campaign ' || (k - 8), NULL, NULL, NULL, NULL
    FROM range(${int(NAMED_SOURCES + 1)}, ${int(n + 1)}) t(k)`
      : EMPTY;
  return sql`
    CREATE TABLE source_list AS
    SELECT * FROM (VALUES
      (1, 'campaign', 'k-1', 'Spring sale', NULL, NULL, NULL, NULL),
      (2, 'campaign', 'k-2', 'Summer newsletter', NULL, NULL, NULL, NULL),
      (3, 'campaign', 'k-3', 'Black Friday', NULL, NULL, NULL, NULL),
      (4, 'campaign', 'k-4', 'New arrivals', NULL, NULL, NULL, NULL),
      (5, 'campaign', 'k-5', 'Loyalty club', NULL, NULL, NULL, NULL),
      (6, 'campaign', 'k-6', 'Clearance', NULL, NULL, NULL, NULL),
      (7, 'campaign', 'k-7', 'Gift guide', NULL, NULL, NULL, NULL),
      (8, 'campaign', 'k-8', 'Back to school', NULL, NULL, NULL, NULL),
      (9, 'automation', 'a-1', 'Abandoned cart', NULL, NULL, NULL, NULL),
      (10, 'automation', 'a-2', 'Birthday coupon', NULL, NULL, NULL, NULL),
      (11, 'automation', 'a-3', 'Win-back', NULL, NULL, NULL, NULL),
      (12, 'smartflow', 'n-1', 'Welcome: first e-mail', 'sf-1', 'Welcome series', 'd-1', 'Welcome e-mail 1'),
      (13, 'smartflow', 'n-2', 'Welcome: reminder', 'sf-1', 'Welcome series', 'd-2', 'Welcome e-mail 2'),
      (14, 'smartflow', 'n-3', 'Post-purchase: review', 'sf-2', 'Post-purchase', 'd-3', 'Review request'),
      (15, 'smartflow', 'n-4', 'Post-purchase: cross-sell', 'sf-2', 'Post-purchase', NULL, NULL),
      (16, 'smartflow', 'n-5', 'Re-engagement', 'sf-3', 'Sleeping customers', 'd-5', 'We miss you')
    ) v(k, source_type, source_id, name, smartflow_id, smartflow_name, delivery_id, delivery_name)${fewer}${more}`;
}

function sourcesTable(o: GenerateOptions): Sql {
  const multi = o.plugins > 1;
  return sql`
    CREATE TABLE sources AS
    SELECT ${multi ? sql`p.plugin_id,` : EMPTY} s.source_type, s.source_id, s.name,
      CASE WHEN s.source_type = 'smartflow' THEN NULL ELSE s.source_id END AS campaign_id,
      s.smartflow_id, s.smartflow_name, s.delivery_id, s.delivery_name,
      CAST(getvariable('day_from') AS TIMESTAMP) - INTERVAL 40 DAY
        + INTERVAL (CASE WHEN s.k <= ${int(NAMED_SOURCES)} THEN s.k * 3 ELSE s.k % 40 END) DAY AS started_at
    FROM source_list s ${multi ? sql`CROSS JOIN plugins p` : EMPTY}
    ORDER BY ${multi ? sql`p.plugin_id, ` : EMPTY}s.k`;
}

/** Milliseconds from the first day of orders to the end of the last. */
const SPAN = sql`(epoch_ms(CAST(getvariable('day_to') AS TIMESTAMP) + INTERVAL 1 DAY) - epoch_ms(CAST(getvariable('day_from') AS TIMESTAMP)))`;

function touchesTable(o: GenerateOptions): Sql {
  const touchStart = sql`epoch_ms(CAST(getvariable('day_from') AS TIMESTAMP) - INTERVAL 35 DAY)`;
  const touchSpan = sql`(${SPAN} + CAST(35 AS BIGINT) * 86400000)`;
  return sql`
    CREATE TABLE touches AS
    WITH t AS (
      SELECT i, 1 + CAST(floor(u('tc', i) * ${int(o.contacts)}) AS BIGINT) AS c,
        make_timestamp(1000 * (${touchStart} + CAST(floor(u('td', i) * ${touchSpan}) AS BIGINT))) AS datetime,
        u('tt', i) AS tt,
        1 + CAST(floor(pow(u('ts', i), 1.6) * ${int(sourcesOf(o))}) AS INTEGER) AS k
      FROM range(1, ${int(o.touches + 1)}) r(i))
    SELECT ${pluginColumn(o, sql`t.c`)}
      'c-' || t.c AS contact_id, t.datetime,
      CASE WHEN t.tt < 0.62 THEN 'click' ELSE 'open' END AS touch,
      s.source_type, s.source_id
    FROM t JOIN source_list s ON s.k = t.k
    ORDER BY t.i`;
}

/** One row per order with its draws: contact, instant, currency, amounts, status, refund. */
function orderRowsTable(o: GenerateOptions): Sql {
  const others = currenciesOf(o).map(([code]) => literal(code));
  return sql`
    CREATE TABLE order_rows AS
    WITH o AS (
      SELECT i, 1 + CAST(floor(u('oc', i) * ${int(o.contacts)}) AS BIGINT) AS c,
        make_timestamp(1000 * (epoch_ms(CAST(getvariable('day_from') AS TIMESTAMP)) + CAST(floor(u('od', i) * ${SPAN}) AS BIGINT))) AS datetime,
        u('ocur', i) AS cu, u('oa', i) AS a, u('os', i) AS st, u('or', i) AS rf, u('orx', i) AS rx
      FROM range(1, ${int(o.orders + 1)}) r(i)),
    priced AS (
      SELECT o.*, p.reference_currency,
        CASE WHEN cu < 0.6 THEN p.reference_currency ELSE pick([${joinSql(others)}], (cu - 0.6) / 0.4) END AS currency,
        CASE WHEN a < 0.02 THEN 0 ELSE round(5 + pow(a, 2) * 395, 2) END AS net
      FROM o JOIN (SELECT row_number() OVER (ORDER BY plugin_id) - 1 AS idx, * FROM plugins) p
        ON p.idx = ${o.plugins > 1 ? sql`o.c % ${int(o.plugins)}` : sql`0`})
    SELECT i, c, 'o-' || i AS order_id, datetime, currency,
      CAST(CASE WHEN currency = 'CZK' THEN round(net * 25) ELSE net END AS DECIMAL(18,2)) AS amount_wo_tax,
      CAST(round(CASE WHEN currency = 'CZK' THEN round(net * 25) ELSE net END * 1.21, 2) AS DECIMAL(18,2)) AS amount_w_tax,
      CASE WHEN st < 0.015 THEN 'cancelled' WHEN st < 0.02 THEN 'storno' WHEN st < 0.1 THEN 'shipped' ELSE 'completed' END AS status,
      rf < 0.06 AS refunded, rx
    FROM priced`;
}

/** The orders file: each order row, then its refund (if any) after it. */
function ordersTable(o: GenerateOptions): Sql {
  const plugin = pluginColumn(o, sql`o.c`);
  return sql`
    CREATE TABLE orders AS
    SELECT * EXCLUDE (i, seq) FROM (
      SELECT o.i, 0 AS seq, ${plugin}
        o.order_id, 'c-' || o.c AS contact_id, o.datetime, o.currency, o.amount_wo_tax, o.amount_w_tax,
        c.country, false AS is_refund, o.status
      FROM order_rows o JOIN contacts c ON c.contact_id = 'c-' || o.c
      UNION ALL
      SELECT o.i, 1 AS seq, ${plugin}
        o.order_id, 'c-' || o.c, o.datetime + INTERVAL (1 + CAST(floor(o.rx * 45) AS INTEGER)) DAY + INTERVAL 2 HOUR,
        o.currency,
        -- some files carry refunds as negative amounts, others as positive: both are read as refunds
        CASE WHEN o.rx < 0.5 THEN 1 ELSE -1 END * CASE WHEN o.rx < 0.25 OR o.rx >= 0.75 THEN o.amount_wo_tax ELSE round(o.amount_wo_tax / 2, 2) END,
        CASE WHEN o.rx < 0.5 THEN 1 ELSE -1 END * CASE WHEN o.rx < 0.25 OR o.rx >= 0.75 THEN o.amount_w_tax ELSE round(o.amount_w_tax / 2, 2) END,
        c.country, true, 'refunded'
      FROM order_rows o JOIN contacts c ON c.contact_id = 'c-' || o.c
      WHERE o.refunded AND o.amount_wo_tax <> 0)
    ORDER BY i, seq`;
}

/** Rates on working days around the period, of every currency into each reference currency in refs. */
function fxTable(refs: string[], currencies: readonly Currency[]): Sql {
  const base = currencies.map(([c, v]) => sql`(${literal(c)}, ${trusted(v)})`);
  return sql`
    CREATE TABLE fx AS
    WITH days AS (
      SELECT CAST(d AS DATE) AS date, row_number() OVER (ORDER BY d) AS n
      FROM range(CAST(getvariable('day_from') AS TIMESTAMP) - INTERVAL 10 DAY,
                 CAST(getvariable('day_to') AS TIMESTAMP) + INTERVAL 61 DAY, INTERVAL 1 DAY) t(d)),
    base(currency, eur) AS (VALUES ${joinSql(base)})
    SELECT d.date, c.currency,
      CAST(round(c.eur / r.eur * (1 + 0.02 * sin(d.n / 9.0 + length(c.currency || r.currency))), 6) AS DECIMAL(18,6)) AS rate,
      r.currency AS reference_currency
    FROM days d CROSS JOIN base c CROSS JOIN base r
    WHERE isodow(d.date) < 6 AND c.currency <> r.currency AND r.currency IN ${list(refs)}
    ORDER BY d.date, r.currency, c.currency`;
}

/** A welcome e-mail's HTML in one language. */
function page(lang: string, greeting: string, body: string, unsubscribe: string): string {
  return (
    `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${greeting}</title></head><body>` +
    `<h1>${greeting}, {{ contact.firstName | default: "friend" }}!</h1><p>${body}</p>` +
    `<p><a href="https://shop.convx.dev/new?utm_source=email">Shop now</a></p>` +
    `<img src="https://shop.convx.dev/banner.png" alt="${greeting}" width="600">` +
    `<p><a href="https://shop.convx.dev/unsubscribe?contact={{ contact.contactId }}">${unsubscribe}</a></p></body></html>`
  );
}

/** Three welcome assets: Czech, English, and one for every language; constants of a VALUES list. */
function assetsTable(): Sql {
  const assets: [string, string | null, string, string, string, string][] = [
    ['welcome-cs', 'cs', 'Vítejte, {{ contact.firstName | default: "příteli" }}', page('cs', 'Vítejte', 'Děkujeme za registraci.', 'Odhlásit odběr'), 'Vítejte! Děkujeme za registraci.', 'Novinky pro vás'],
    ['welcome-en', 'en', 'Welcome, {{ contact.firstName | default: "friend" }}', page('en', 'Welcome', 'Thanks for signing up.', 'Unsubscribe'), 'Welcome! Thanks for signing up.', 'News for you'],
    ['welcome', null, 'Welcome / Vítejte', page('en', 'Welcome', 'Thanks for signing up. Děkujeme za registraci.', 'Unsubscribe'), 'Welcome! Thanks for signing up.', ''],
  ];
  const rows = assets.map((a) => sql`(${joinSql(a.map((v) => (v === null ? sql`NULL` : literal(v))))})`);
  return sql`
    CREATE TABLE assets AS SELECT * FROM (VALUES ${joinSql(rows)}) v(asset_id, language, subject, html, text, preheader)`;
}

/** The files, in this order; `timestamp`: the column CSV writes as ISO 8601 text (Parquet keeps it typed). */
const EXPORTS: { table: string; timestamp?: 'started_at' | 'datetime' }[] = [
  { table: 'plugins' },
  { table: 'contacts' },
  { table: 'sources', timestamp: 'started_at' },
  { table: 'touches', timestamp: 'datetime' },
  { table: 'orders', timestamp: 'datetime' },
  { table: 'fx' },
  { table: 'assets' },
];

async function exportTables(db: Database, dir: string, format: 'csv' | 'parquet'): Promise<{ table: string; file: string; rows: number }[]> {
  const files: { table: string; file: string; rows: number }[] = [];
  for (const { table, timestamp } of EXPORTS) {
    const file = join(dir, `${table}.${format}`);
    const select =
      format === 'csv' && timestamp
        ? sql`SELECT * REPLACE (strftime(${trusted(timestamp)}, '%Y-%m-%dT%H:%M:%S.%gZ') AS ${trusted(timestamp)}) FROM ${ident(table)}`
        : sql`SELECT * FROM ${ident(table)}`;
    const options = format === 'csv' ? trusted('(FORMAT csv, HEADER true)') : trusted('(FORMAT parquet, COMPRESSION zstd)');
    // A path of COPY cannot be a parameter.
    await db.exec(sql`COPY (${select}) TO ${literal(file)} ${options}`);
    const row = await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM ${ident(table)}`);
    files.push({ table, file, rows: Number(row?.n ?? 0) });
  }
  return files;
}
