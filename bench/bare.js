#!/usr/bin/env node
// The bare DuckDB counterpart of a convx case (bench/run.js): the hand-written SQL of
// bench/sql/ over the dataset's files, in the same engine (@duckdb/node-api), with
// nothing of convx. Usage:
//   node bench/bare.js report --data DIR --from YYYY-MM-DD --to YYYY-MM-DD
//       the aggregate per source as one JSON document on stdout (convx report -o json)
//   node bench/bare.js trend --data DIR --from D --to D
//       the series by day as one JSON document on stdout (convx trend -o json)
//   node bench/bare.js items --data DIR --from D --to D --out FILE
//       every conversion record, COPY ... TO FILE as CSV (convx items --all -o csv)
//   node bench/bare.js sql report|items --data DIR --from D --to D
//       prints the SQL it would run
//   node bench/bare.js serve --data FILE.duckdb [--port N] [--connections N]
//       the floor of the server cases: fastify, one prepared statement per request, no auth or
//       checks, over an imported file's per-day sums copied into memory and its transactions
//       read in place by the index on order_id (sql/served*.sql): GET /v1/conversions?dateFrom&dateTo (the first 50
//       rows of the report) and GET /v1/conversions/items?orderId&dateFrom&dateTo (an order's
//       records); logs {"msg":"listening","url":...} on stderr as convx serve does
// A table is NAME.parquet, NAME.csv, or a folder NAME/ of Parquet (hive partitions) or CSV files.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { DuckDBInstance } from '@duckdb/node-api';

const here = new URL('.', import.meta.url);
const sqlFile = (name) => readFileSync(new URL(`sql/${name}.sql`, here), 'utf8');

/** CSV columns read with the type the files mean (Parquet carries its own). */
const CSV_TYPES = {
  orders: { order_id: 'VARCHAR', contact_id: 'VARCHAR', datetime: 'TIMESTAMP', currency: 'VARCHAR', country: 'VARCHAR', status: 'VARCHAR' },
  touches: { contact_id: 'VARCHAR', datetime: 'TIMESTAMP', touch: 'VARCHAR', source_type: 'VARCHAR', source_id: 'VARCHAR' },
  fx: { date: 'DATE', currency: 'VARCHAR', rate: 'DECIMAL(18,10)' },
  sources: { source_type: 'VARCHAR', source_id: 'VARCHAR', started_at: 'TIMESTAMP' },
  plugins: { plugin_id: 'VARCHAR', reference_currency: 'VARCHAR' },
  contacts: { contact_id: 'VARCHAR', client_contact_id: 'VARCHAR', country: 'VARCHAR' },
};

const literal = (text) => `'${text.replaceAll("'", "''")}'`;

function tableExpression(dir, name) {
  const types = `types = {${Object.entries(CSV_TYPES[name] ?? {}).map(([c, t]) => `${literal(c)}: ${literal(t)}`).join(', ')}}`;
  const file = (suffix) => join(dir, `${name}${suffix}`);
  if (existsSync(file('.parquet'))) return `read_parquet(${literal(file('.parquet'))})`;
  if (existsSync(file('.csv'))) return `read_csv(${literal(file('.csv'))}, header = true, ${types})`;
  const folder = join(dir, name);
  if (existsSync(folder) && statSync(folder).isDirectory()) {
    const parquet = readdirSync(folder, { recursive: true }).some((f) => String(f).endsWith('.parquet'));
    return parquet
      ? `read_parquet(${literal(`${folder}/**/*.parquet`)}, hive_partitioning = true, union_by_name = true)`
      : `read_csv(${literal(`${folder}/**/*.csv`)}, header = true, hive_partitioning = true, union_by_name = true, ${types})`;
  }
  throw new Error(`${dir}: no ${name}.parquet, ${name}.csv or folder ${name}/`);
}

/**
 * A case's SQL with the files it includes put in: transactions.sql (or imported.sql for a .duckdb
 * file) and sums.sql per key; a series from a .duckdb file reads its per-day sums instead
 * (imported-days.sql, sums-days.sql), as convx does.
 */
function caseText(kind, transactions, sums = 'sums') {
  return sqlFile(kind)
    .replace('{{transactions}}', sqlFile(transactions))
    .replace(/\{\{sums:([^}]+)\}\}/g, (_, key) => sqlFile(sums).replaceAll('{{key}}', key).trimEnd());
}

/** The statements of a case: its SQL file with transactions.sql and the tables put in. */
export function statements(kind, { data, from, to }) {
  const dir = resolve(data);
  // An imported .duckdb file (convx data import): its attributed transactions, attached read-only.
  if (dir.endsWith('.duckdb')) {
    const text = (kind === 'trend' ? caseText(kind, 'imported-days', 'sums-days') : caseText(kind, 'imported')).replace(/\{\{(from|to)\}\}/g, (_, key) => (key === 'from' ? from : to));
    return [`ATTACH ${literal(dir)} AS imported (READ_ONLY)`, ...split(text)];
  }
  let text = caseText(kind, 'transactions');
  text = text.replace(/\{\{(\w+)\}\}/g, (_, key) => {
    if (key === 'from') return from;
    if (key === 'to') return to;
    return tableExpression(dir, key);
  });
  return split(text);
}

/** A script's statements. */
function split(text) {
  return text
    .split(/;\s*\n/)
    .map((s) => s.trim())
    .filter((s) => s.replace(/--.*$/gm, '').trim() !== '');
}

function parseArgs(argv) {
  const options = {};
  const positional = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) options[argv[i].slice(2)] = argv[++i];
    else positional.push(argv[i]);
  }
  return { positional, options };
}

/**
 * The floor server's two statements, prepared on each connection: a report of $1..$2
 * (served-report.sql, then per_group of sums.sql and the rows of report.sql), an order's records.
 */
function servedStatements() {
  const perGroup = /per_group AS \([\s\S]*?FROM per_currency GROUP BY ALL\)/.exec(sqlFile('sums').replaceAll('{{key}}', 'source_type, source_id'))[0]
    .replace('list(struct_pack(', 'list_sort(list(struct_pack(')
    .replace(') ORDER BY currency) AS breakdown', '))) AS breakdown');
  const rows = sqlFile('report')
    .split('{{sums:source_type, source_id}}')[1]
    .replace("'&dateFrom={{from}}&dateTo={{to}}'", "'&dateFrom=' || $1 || '&dateTo=' || $2");
  const [macro, report] = split(`${sqlFile('served-report').trimEnd()}\n${perGroup}\n${rows}`);
  return { macro, report, lookup: split(sqlFile('served-lookup'))[0] };
}

/** The floor: a bare fastify server (node bench/bare.js serve --data FILE.duckdb). */
async function serve(options) {
  const { default: Fastify } = await import('fastify');
  const file = resolve(options.data);
  const instance = await DuckDBInstance.create(':memory:');
  const setup = await instance.connect();
  await setup.run("SET TimeZone = 'UTC'");
  await setup.run(`ATTACH ${literal(file)} AS imported (READ_ONLY)`);
  for (const statement of split(sqlFile('served'))) await setup.run(statement);
  // as convx serve: the cores shared among the connections, one thread a query with more connections than cores
  await setup.run(`SET threads = ${Math.max(1, Math.floor(availableParallelism() / Number(options.connections ?? 8)))}`);
  const text = servedStatements();
  const free = [];
  for (let i = 0; i < Number(options.connections ?? 8); i++) {
    const connection = await instance.connect();
    await connection.run(text.macro);
    free.push({ report: await connection.prepare(text.report), lookup: await connection.prepare(text.lookup) });
  }
  const waiting = [];
  const run = async (name, values) => {
    const c = free.pop() ?? (await new Promise((resolve) => waiting.push(resolve)));
    try {
      c[name].bind(values);
      return (await c[name].runAndReadAll()).getRowObjectsJson();
    } finally {
      const next = waiting.shift();
      if (next) next(c);
      else free.push(c);
    }
  };
  const page = (rows) => ({ conversions: rows.slice(0, 50), paging: { start: 0, count: Math.min(rows.length, 50), totalCount: rows.length } });
  const app = Fastify();
  app.get('/v1/conversions', async (request) => page(await run('report', [request.query.dateFrom, request.query.dateTo])));
  app.get('/v1/conversions/items', async (request) =>
    page(await run('lookup', [request.query.orderId, request.query.dateFrom, request.query.dateTo])),
  );
  const url = await app.listen({ port: Number(options.port ?? 0), host: '127.0.0.1' });
  process.stderr.write(`${JSON.stringify({ msg: 'listening', url, plugins: ['default'] })}\n`);
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function main() {
  const { positional, options } = parseArgs(process.argv.slice(2));
  const [kind, sub] = positional;
  if (kind === 'serve') return serve(options);
  for (const required of ['data', 'from', 'to']) {
    if (!options[required]) throw new Error(`--${required} is required`);
  }
  if (kind === 'sql') {
    process.stdout.write(`${statements(sub, options).join(';\n\n')};\n`);
    return;
  }
  if (!['report', 'items', 'trend'].includes(kind)) throw new Error(`unknown case "${kind}": report, items, trend or sql`);
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  await connection.run("SET TimeZone = 'UTC'");
  const all = statements(kind, options);
  for (const statement of all.slice(0, -1)) await connection.run(statement);
  const query = all.at(-1);
  if (kind === 'report') {
    const reader = await connection.runAndReadAll(query);
    const rows = reader.getRowObjectsJson();
    const paging = { start: 0, count: Math.min(rows.length, 50), totalCount: rows.length };
    process.stdout.write(`${JSON.stringify({ conversions: rows.slice(0, 50), paging }, null, 2)}\n`);
  } else if (kind === 'trend') {
    const buckets = (await connection.runAndReadAll(query)).getRowObjectsJson();
    const response = { dateFrom: options.from, dateTo: options.to, timeZone: 'UTC', interval: 'day', buckets };
    process.stdout.write(`${JSON.stringify(response, null, 2)}\n`);
  } else {
    if (!options.out) throw new Error('--out FILE is required for items');
    await connection.run(`COPY (${query}) TO ${literal(resolve(options.out))} (FORMAT csv, HEADER true)`);
  }
  connection.closeSync();
  instance.closeSync();
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  main().catch((error) => {
    process.stderr.write(`bare: ${error.message}\n`);
    process.exitCode = 1;
  });
}
