/**
 * `data import --append` against a full import, on random tiny datasets (issue 21, item 1): a
 * seeded generator makes a few plugins' orders (second rows of an id, earlier, later or at the
 * same instant, of another contact; refunds; cancelled and zero orders; negative amounts),
 * touches (clicks and others, ties at one instant, clicks exactly 30 days before an order and a
 * millisecond more), FX rates in several currencies (to the reference currency and to another;
 * shared or per plugin), contacts and sources (second rows; some tables without plugin_id), the
 * reference currency told by plugins, by fx or by --reference-currency, and deals every row to
 * one of a few steps: each step's rows become a new file of each table's folder, sorting after
 * the earlier ones, so rows arrive late in every way (a refund before its order, a rate after
 * the orders it prices, a contact's or a source's first row after their conversions, an earlier
 * row of an order id, a plugin of only new files, a plugin's other reference currency), in
 * files with a byte order mark, without the last line end, header-only or empty. After each
 * step the appended file holds every table as a full import of the same files writes it
 * (sameTables), or both refuse the dataset alike. The seeds that once failed are kept as fixed
 * examples, minimised. Files after the first step end their lines in CRLF by chance, after
 * LF files: a full import reads each run of files with its own line ending, as --append reads
 * its new files alone.
 */
import { mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { appendDataset, type AppendSummary } from '../src/local/import-append.js';
import { importDataset, type ImportOptions } from '../src/local/import-writer.js';
import { csv, suiteThreadsOption, tempDir } from './helpers.js';
import { literal, sql } from '../src/local/sql.js';
import { sameTables } from './import-compare.js';

/** A seeded generator of floats in [0, 1): a linear congruential one, the seed spread first. */
function random(seed: number): () => number {
  let s = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

type Cell = string | number | boolean | null;
type Row = { step: number; cells: Cell[] };

const HEADERS = {
  plugins: ['plugin_id', 'reference_currency', 'name'],
  orders: ['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax', 'country', 'is_refund', 'status'],
  touches: ['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'],
  fx: ['plugin_id', 'date', 'currency', 'rate', 'reference_currency'],
  contacts: ['plugin_id', 'contact_id', 'client_contact_id', 'first_name', 'surname', 'country'],
  sources: ['plugin_id', 'source_type', 'source_id', 'name', 'campaign_id', 'smartflow_id', 'started_at'],
} as const;
type Table = keyof typeof HEADERS;

/** A multiplier of the orders and touches per plugin (APPEND_SIZE; 1 in CI), to hunt on denser data locally. */
const SIZE = Number(process.env.APPEND_SIZE ?? 1);
/** The most steps of a dataset (APPEND_MAX_STEPS; 4 in CI): the first import and up to three appends. */
const MAX_STEPS = Number(process.env.APPEND_MAX_STEPS ?? 4);
const DAY = 86_400_000;
const START = Date.parse('2024-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** One random dataset: every table's rows, each dealt to a step (0: the first import). */
function generate(seed: number): { steps: number; rows: Record<Table, Row[]>; shared: Set<Table> } {
  const r = random(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const steps = 2 + Math.floor(r() * (MAX_STEPS - 1));
  const step = () => (chance(0.45) ? 0 : 1 + Math.floor(r() * (steps - 1)));
  const rows: Record<Table, Row[]> = { plugins: [], orders: [], touches: [], fx: [], contacts: [], sources: [] };
  const add = (t: Table, cells: Cell[], at = step()) => rows[t].push({ step: at, cells });
  // A coarse grid of instants (ties happen), over 70 days.
  const instant = () => START + Math.floor(r() * 70) * DAY + pick([0, 6, 12]) * 3_600_000;
  const fxReference = chance(0.5);
  const late = chance(0.3) ? 'p-c' : undefined;
  const plugins = ['p-a', 'p-b', ...(late ? [late] : [])];
  for (const p of plugins) add('plugins', [p, fxReference ? null : 'EUR', `Shop ${p}`], p === late && chance(0.5) ? steps - 1 : 0);
  // A later row of a plugin: another name (nothing changes), or another reference currency (only a full import can take it).
  if (chance(0.2)) add('plugins', ['p-a', chance(0.5) ? 'CZK' : null, 'Shop A again'], 1 + Math.floor(r() * (steps - 1)));
  const sources: [string, string][] = [['campaign', 'k-1'], ['campaign', 'k-2'], ['campaign', 'k-3'], ['automation', 'a-1'], ['smartflow', 's-1']];
  for (const p of plugins) {
    const first = p === late ? Math.max(1, step()) : undefined;
    const at = () => first ?? step();
    const contacts = ['c-1', 'c-2', 'c-3', 'c-4'];
    const orders: { id: string; contact: string; at: number }[] = [];
    for (let i = 1; i <= 8 * SIZE; i++) {
      const id = `o-${i}`;
      const contact = pick(contacts);
      const t = instant();
      const order = (ms: number, refund: boolean, who = contact) =>
        add('orders', [p, id, who, iso(ms), pick(['EUR', 'CZK', 'CZK', 'USD']), pick(['10.5', '99.99', '0', '-5', '123.4567']), pick(['12.7', '121', '0', '-6.05']), pick(['CZ', null]), refund ? pick(['true', '1']) : pick(['false', null]), pick(['completed', 'completed', 'cancelled', 'Storno', null])], at());
      order(t, false);
      orders.push({ id, contact, at: t });
      if (chance(0.3)) order(pick([t, t - DAY, t + 6 * 3_600_000, t - 1]), false, chance(0.8) ? contact : pick(contacts));
      if (chance(0.3)) order(pick([t, t + DAY, t + 3 * DAY, t - DAY]), true);
    }
    for (let i = 0; i < 24 * SIZE; i++) {
      const [type, id] = pick(sources);
      add('touches', [p, pick(contacts), iso(instant()), pick(['click', 'click', 'Click', 'open', 'sent']), type, id], at());
    }
    // Hunted: the window's edge (a click exactly 30 days before an order, one a millisecond more), two sources at one instant.
    for (const o of [pick(orders), pick(orders)]) {
      const [type, id] = pick(sources);
      add('touches', [p, o.contact, iso(o.at - 30 * DAY), 'click', type, id], at());
      add('touches', [p, o.contact, iso(o.at - 30 * DAY - 1), 'click', ...pick(sources)], at());
      const tie = o.at - pick([0, DAY, 29 * DAY]);
      add('touches', [p, o.contact, iso(tie), 'click', 'campaign', 'k-2'], at());
      add('touches', [p, o.contact, iso(tie), 'click', ...pick(sources)], at());
    }
    for (const c of contacts) {
      if (chance(0.7)) add('contacts', [p, c, `client-${c}`, `First ${c}`, null, pick(['SK', null])], at());
      if (chance(0.3)) add('contacts', [p, c, `other-${c}`, `Second ${c}`, 'Late', 'AT'], at());
    }
    for (const [type, id] of sources) {
      const started = () => (chance(0.5) ? iso(instant()) : null);
      if (chance(0.6)) add('sources', [p, type, id, `Name ${id}`, chance(0.3) ? `camp-${id}` : null, type === 'smartflow' && chance(0.5) ? 'sf-9' : null, started()], at());
      if (chance(0.3)) add('sources', [p, type, id, `Renamed ${id}`, null, null, started()], at());
    }
  }
  for (const currency of ['CZK', 'USD']) {
    for (let i = 0; i < 4; i++) {
      const date = iso(START + Math.floor(r() * 72 - 2) * DAY).slice(0, 10);
      // Where fx tells the reference currency, the first import has a rate.
      add('fx', [pick(plugins), date, currency, pick(['0.04', '0.041', '0.9', '1.1', '0.0399']), fxReference ? 'EUR' : pick([null, 'EUR'])], fxReference && i === 0 ? 0 : step());
    }
    if (!fxReference && chance(0.5)) add('fx', [pick(plugins), iso(START + 10 * DAY).slice(0, 10), currency, '25', 'USD']);
  }
  // Rows of one file in a random order, so a table's first rows are any of them.
  for (const t of Object.keys(rows) as Table[]) rows[t].sort(() => r() - 0.5);
  // Tables without plugin_id (every plugin's): fx mostly (always where it tells the reference currency), the others by chance.
  const shared = new Set<Table>((['fx', 'touches', 'contacts', 'sources'] as const).filter((t) => chance(t !== 'fx' ? 0.2 : fxReference ? 1 : 0.75)));
  return { steps, rows, shared };
}

/** A file's text as written by some exporter: as it is, with a byte order mark, without the last line end, with CRLF line ends; or, without rows, empty. */
function styled(text: string, rows: number, r: () => number): string {
  const style = r();
  if (rows === 0 && style < 0.15) return '';
  if (style < 0.3) return `\ufeff${text}`;
  if (style < 0.45) return text.slice(0, -1);
  if (style < 0.6) return text.replaceAll('\n', '\r\n');
  return text;
}

/** Each step's files (path -> text): table/<step>.csv where the step has rows (step 0: every table), or without rows by chance. */
function stepFiles(data: ReturnType<typeof generate>, seed: number): Record<string, string>[] {
  const r = random(seed ^ 0x5eed);
  return Array.from({ length: data.steps }, (_, at) => {
    const files: Record<string, string> = {};
    for (const t of Object.keys(HEADERS) as Table[]) {
      const chosen = data.rows[t].filter((row) => row.step === at);
      if (chosen.length === 0 && at > 0 && r() > 0.25) continue;
      const drop = data.shared.has(t) ? 1 : 0;
      const text = csv(HEADERS[t].slice(drop), chosen.map((row) => row.cells.slice(drop)));
      files[`${t}/${String(at).padStart(2, '0')}.csv`] = at === 0 ? text : styled(text, chosen.length, r);
    }
    return files;
  });
}

const root = tempDir('convx-append-property-');

function write(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    const file = join(dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    utimesSync(file, 1_700_000_000, 1_700_000_000);
  }
}

/**
 * Imports the first step's files, then appends each next step's, comparing the file with a full
 * import of the same files after each: the same tables (sameTables), or the same refusal. Says
 * which way each update took (AppendSummary.way). DuckDB
 * keeps to the suite's threads (test/setup.ts), as a command run by the suite does.
 */
async function compareSteps(name: string, steps: Record<string, string>[], asked: ImportOptions = {}): Promise<(AppendSummary['way'] | 'refused')[]> {
  const ways: (AppendSummary['way'] | 'refused')[] = [];
  const options: ImportOptions = { ...suiteThreadsOption(), ...asked };
  const dir = join(root, name);
  const file = join(root, `${name}.duckdb`);
  write(dir, steps[0]!);
  await importDataset(dir, file, options);
  for (let at = 1; at < steps.length; at++) {
    write(dir, steps[at]!);
    const full = join(root, `${name}-full-${at}.duckdb`);
    const [a, b] = await Promise.allSettled([importDataset(dir, full, options), appendDataset(dir, file, options)]);
    const label = `${name}, step ${at}`;
    if (a.status === 'rejected') {
      // A dataset a full import refuses (a data error), --append refuses as well, and says the same.
      expect(b.status === 'rejected' && String(b.reason), label).toBe(String(a.reason));
      ways.push('refused');
      break;
    }
    expect(b.status === 'rejected' ? String(b.reason.stack) : '', label).toBe('');
    if (b.status === 'fulfilled') ways.push(b.value.way);
    await sameTables(full, file, label);
    rmSync(full);
  }
  rmSync(file);
  rmSync(dir, { recursive: true });
  return ways;
}

/** Every update of a run (compareSteps) took the short way: only the new files read (append/update.ts); none refused. */
function everyStepShort(ways: string[], steps: number): void {
  expect(ways, ways.join()).toEqual(Array.from({ length: steps - 1 }, () => 'short'));
}

/** A seed's dataset, imported and appended step by step (a quarter of the seeds with --reference-currency CZK). */
async function check(seed: number): Promise<(AppendSummary['way'] | 'refused')[]> {
  const data = generate(seed);
  return compareSteps(`seed-${seed}`, stepFiles(data, seed), seed % 4 === 3 ? { referenceCurrency: 'CZK' } : {});
}

const ORDERS = 'plugin_id,order_id,contact_id,datetime,currency,amount_wo_tax,amount_w_tax,status\n';
const TOUCHES = 'plugin_id,contact_id,datetime,touch,source_type,source_id\n';
const CONTACTS = 'plugin_id,contact_id,first_name\n';
/** The first step of the fixed examples: an order of c-1 clicked through k-1. */
const FIRST = {
  'orders/00.csv': `${ORDERS}p-a,o-1,c-1,2024-02-01T10:00:00.000Z,EUR,10,12,completed\n`,
  'touches/00.csv': `${TOUCHES}p-a,c-1,2024-01-20T10:00:00.000Z,click,campaign,k-1\n`,
  'contacts/00.csv': `${CONTACTS}p-a,c-1,Ann\n`,
};

describe('data import --append: fixed examples (seeds that once failed, minimised)', () => {
  it('new rows that change no order: a touch that is not a click, a contact who never converted (the update failed)', async () => {
    const ways = await compareSteps('no-order-changes', [
      FIRST,
      { 'touches/01.csv': `${TOUCHES}p-a,c-1,2024-01-02T10:00:00.000Z,open,campaign,k-1\n` },
      { 'contacts/02.csv': `${CONTACTS}p-a,c-9,Bob\n` },
    ]);
    // new rows of tables and plugins the file holds: only the new files read (append/update.ts)
    everyStepShort(ways, 3);
  });

  it('an empty new file, beside new rows and alone (the update refused it: read alone, it has no columns)', async () => {
    const ways = await compareSteps('empty-file', [
      FIRST,
      { 'orders/01.csv': '', 'touches/01.csv': `${TOUCHES}p-a,c-1,2024-02-01T09:00:00.000Z,click,campaign,k-2\n` },
      { 'touches/02.csv': '' },
    ]);
    // new rows of tables and plugins the file holds: only the new files read (append/update.ts)
    everyStepShort(ways, 3);
  });

  it('the window\'s edge: a click 30 days and a millisecond before the order does not take it, one exactly 30 days before does; ties at one instant', async () => {
    const ways = await compareSteps('window-edge', [
      { ...FIRST, 'touches/00.csv': TOUCHES },
      { 'touches/01.csv': `${TOUCHES}p-a,c-1,2024-01-02T09:59:59.999Z,click,campaign,k-9\n` },
      { 'touches/02.csv': `${TOUCHES}p-a,c-1,2024-01-02T10:00:00.000Z,click,automation,a-1\np-a,c-1,2024-01-02T10:00:00.000Z,click,campaign,k-1\n` },
      { 'orders/03.csv': `${ORDERS}p-a,o-1,c-1,2024-02-01T09:59:59.999Z,EUR,7,8,completed\np-a,o-2,c-1,2024-02-01T10:00:00.001Z,EUR,3,4,completed\n` },
    ]);
    // new rows of tables and plugins the file holds: only the new files read (append/update.ts)
    everyStepShort(ways, 4);
  });
});

const FX = 'date,currency,rate\n';
const SOURCES = 'plugin_id,source_type,source_id,name,started_at\n';

describe('data import --append: late rows of every kind', () => {
  it('a refund before its order, an earlier row of a stored order id, rates after their orders and between others, first rows of a contact and a source, a source that sorts first and one that loses its only order', async () => {
    const order = (id: string, at: string, amount = '10', refund = 'false', status = 'completed') => `p-a,${id},c-1,${at},CZK,${amount},${amount},${status},${refund}\n`;
    const HEAD = 'plugin_id,order_id,contact_id,datetime,currency,amount_wo_tax,amount_w_tax,status,is_refund\n';
    const ways = await compareSteps('late-rows', [
      {
        'plugins.csv': 'plugin_id,reference_currency\np-a,EUR\n',
        'orders/00.csv': `${HEAD}${order('o-1', '2024-02-01T10:00:00.000Z')}${order('o-2', '2024-02-10T10:00:00.000Z', '0')}${order('o-3', '2024-02-12T10:00:00.000Z', '5', 'true')}`,
        'touches/00.csv': `${TOUCHES}p-a,c-1,2024-01-25T10:00:00.000Z,click,campaign,k-5\np-a,c-1,2024-02-09T10:00:00.000Z,click,campaign,k-6\n`,
        'fx/00.csv': `${FX}2024-01-20,CZK,0.04\n2024-02-10,CZK,0.041\n`,
        'contacts/00.csv': CONTACTS,
        'sources/00.csv': SOURCES,
      },
      {
        // o-3's order after its refund; o-1 earlier than stored, now before k-5's click (k-5 loses its only order); a rate between two.
        'orders/01.csv': `${HEAD}${order('o-3', '2024-02-11T10:00:00.000Z', '50')}${order('o-1', '2024-01-24T10:00:00.000Z', '20')}${order('o-2', '2024-02-10T10:00:00.000Z', '3')}`,
        'fx/01.csv': `${FX}2024-02-05,CZK,0.045\n2024-02-11,CZK,0.05\n`,
        'contacts/01.csv': `${CONTACTS}p-a,c-1,Ann\n`,
      },
      {
        // A click of a source that sorts first (every source_key moves), the sources' first rows, a cancelled row of an id.
        'touches/02.csv': `${TOUCHES}p-a,c-1,2024-01-10T10:00:00.000Z,click,automation,a-0\n`,
        'sources/02.csv': `${SOURCES}p-a,campaign,k-6,Six,\np-a,automation,a-0,Zero,2023-12-01T00:00:00.000Z\n`,
        'orders/02.csv': `${HEAD}${order('o-4', '2024-01-12T10:00:00.000Z', '7', 'false', 'cancelled')}${order('o-4', '2024-01-12T10:00:00.000Z', '8')}`,
      },
    ]);
    // new rows of tables and plugins the file holds: only the new files read (append/update.ts)
    everyStepShort(ways, 3);
  });
});

describe('data import --append: a second rate of a day', () => {
  it('a new rate of a currency and day that has one prices as in a full import', async () => {
    const ways = await compareSteps('same-day-rate', [
      {
        ...FIRST,
        'plugins.csv': 'plugin_id,reference_currency\np-a,EUR\n',
        'orders/00.csv': `${ORDERS}p-a,o-1,c-1,2024-02-01T10:00:00.000Z,CZK,10,12,completed\n`,
        'fx/00.csv': `${FX}2024-01-30,CZK,0.04\n`,
      },
      { 'fx/01.csv': `${FX}2024-01-30,CZK,0.05\n2024-01-31,USD,0.9\n` },
      { 'fx/02.csv': `${FX}2024-01-30,CZK,0.06\n` },
    ]);
    // new rows of tables and plugins the file holds: only the new files read (append/update.ts)
    everyStepShort(ways, 3);
  });
});

describe('data import --append: random datasets', () => {
  // APPEND_SEEDS and APPEND_SEED0 run other seeds (a longer hunt). CI runs seeds 1 to 9 and 24 (about 20
  // appends, each compared): of seeds 1 to 24, 24 alone has an update that takes the full way (every file
  // again, import-writer.ts), the others' all take the short one, so it stands in for seed 10 (one update).
  const hunt = process.env.APPEND_SEEDS !== undefined || process.env.APPEND_SEED0 !== undefined;
  const seeds = hunt ? Array.from({ length: Number(process.env.APPEND_SEEDS ?? 10) }, (_, i) => Number(process.env.APPEND_SEED0 ?? 1) + i) : [1, 2, 3, 4, 5, 6, 7, 8, 9, 24];
  const ways = new Set<string>();
  it.each(seeds)('seed %i: each step appended holds what a full import holds', async (seed) => {
    for (const way of await check(seed)) ways.add(way);
  });
  it.skipIf(hunt)('the seeds reach both ways of an update, the short and the full', () => {
    expect([...ways].sort()).toEqual(['full', 'short']);
  });
});

describe('data import --append: the storage an imported file is written in', () => {
  /** The storage DuckDB says the file holds (DuckDB's tag: v1.0.0+ for its default, v1.5.0+ for the one convx writes). */
  async function storageOf(file: string): Promise<string | undefined> {
    const db = await Database.open(':memory:', { ...suiteThreadsOption(), reuse: true });
    try {
      await db.exec(sql`ATTACH ${literal(file)} AS f (READ_ONLY)`);
      const row = await db.one<{ v: string }>(sql`SELECT tags['storage_version'] AS v FROM duckdb_databases() WHERE database_name = 'f'`);
      return row?.v;
    } finally {
      db.close();
    }
  }

  it("an import writes DuckDB 1.5's storage; a file in DuckDB's older default storage is appended to as any other, and its copy is raised to it", async () => {
    const dir = join(root, 'storage');
    const file = join(root, 'storage.duckdb');
    const full = join(root, 'storage-full.duckdb');
    write(dir, FIRST);
    await importDataset(dir, file, suiteThreadsOption());
    expect(await storageOf(file)).toBe('v1.5.0+');
    // The same file rewritten in DuckDB's default storage, as convx wrote it before.
    const older = join(root, 'storage-older.duckdb');
    const db = await Database.open(':memory:', suiteThreadsOption());
    try {
      await db.exec(sql`ATTACH ${literal(file)} AS f (READ_ONLY)`);
      await db.exec(sql`ATTACH ${literal(older)} AS o`);
      await db.exec(sql`COPY FROM DATABASE f TO o`);
    } finally {
      db.close();
    }
    expect(await storageOf(older)).toBe('v1.0.0+');
    rmSync(file);
    renameSync(older, file);
    write(dir, { 'touches/01.csv': `${TOUCHES}p-a,c-1,2024-01-30T10:00:00.000Z,click,campaign,k-2\n`, 'orders/01.csv': `${ORDERS}p-a,o-2,c-1,2024-02-02T10:00:00.000Z,EUR,5,6,completed\n` });
    const summary = await appendDataset(dir, file, suiteThreadsOption());
    expect(summary.way).toBe('short');
    await importDataset(dir, full, suiteThreadsOption());
    await sameTables(full, file, 'appended to a file in the older storage');
    expect(await storageOf(file)).toBe('v1.5.0+');
  });
});
