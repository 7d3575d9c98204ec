/**
 * The query parameters are one table (src/model/parameters.ts): every row must
 * work as a CLI flag, as a query parameter of the server (schema and answer),
 * in API mode's query string, and as the local SQL filter, with the same rows
 * from each; a bad value is refused by the one parser with the same words on
 * both sides. A row added to the table is tested here once the test knows
 * where a record shows its value (VALUE_OF) or a value of a report filter
 * (VALUES): it says so when it does not.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/commands/index.js';
import { FLAG_FOR_PARAMETER } from '../src/commands/shared.js';
import { EMPTY_VALUE, field, filterNames, flagName, parameters, type Operation } from '../src/model/parameters.js';
import { formatQuery, parseItemsQuery, parseReportQuery } from '../src/model/query.js';
import { ALIAS_QUERY, ITEMS_QUERY, REPORT_QUERY } from '../src/model/schemas.js';
import type { AggregateRow, ConversionRecord } from '../src/model/types.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, SAMPLES } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'parameters-secret-long-enough';
const PERIOD = { dateFrom: '2024-01-01', dateTo: '2024-04-30' };

/** Where a record shows each filter's value (the response side, which the table does not describe). */
const VALUE_OF: Record<string, (r: ConversionRecord) => string | null> = {
  sourceId: (r) => r.source.id,
  sourceType: (r) => r.source.type,
  smartflowId: (r) => r.source.smartflowId,
  deliveryId: (r) => r.source.deliveryId,
  contactId: (r) => r.contactId,
  orderId: (r) => r.orderId,
  country: (r) => r.country,
  currency: (r) => r.conversionsCurrency,
};

/** Per kind, a value the parser must refuse (ids and text take any value). */
const INVALID: Partial<Record<string, string>> = { date: '2024-02-30', count: '0x10', sort: 'nope', codes: 'C1', sourceType: 'sms', choice: 'nope', zone: 'Europe/Prag' };

const SCHEMAS = { report: REPORT_QUERY, items: ITEMS_QUERY } as const;

/** samples/shop opened once and lent to the local commands (kept-backends.ts): the tests are about the filters; a refused value opens as convx does. */
const kept = keptBackends();

describe('the items filters, one table', () => {
  let served: ServedDataset;
  let app: FastifyInstance;
  let headers: Record<string, string>;
  let token: string;
  let url: string;
  let all: ConversionRecord[];

  beforeAll(async () => {
    served = await ServedDataset.load(SAMPLES, { poolSize: 2 });
    app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test', limits: { rateLimitPerMinute: 0 } });
    token = await signDevelopmentToken(SECRET, 'shop', '1h');
    headers = { authorization: `Bearer ${token}` };
    url = await app.listen({ host: '127.0.0.1', port: 0 });
    const res = await app.inject({ method: 'GET', url: `/v1/conversions/items?dateFrom=${PERIOD.dateFrom}&dateTo=${PERIOD.dateTo}&limit=1000`, headers });
    all = (JSON.parse(res.body) as { conversions: ConversionRecord[] }).conversions;
  });
  afterAll(async () => {
    await app.close();
    await served.retire();
  });

  it('every parameter with a flag is a flag of the commands of its operations and a property of their schemas; the aliases take all but the source filters their path fixes', () => {
    for (const operation of ['report', 'items'] as const) {
      const command = COMMANDS.find((c) => c.name === operation)!;
      const flags = (command.options ?? []).map((o) => o.flags);
      for (const p of parameters(operation)) {
        const flag = field(p, 'flag');
        if (flag !== undefined) expect(flags, `${operation} ${p.name}`).toContain(flag);
        expect(Object.keys(SCHEMAS[operation].properties).includes(p.name), `${operation} schema ${p.name}`).toBe(!field(p, 'pathOnly'));
        if (operation === 'items') {
          expect(Object.keys(ALIAS_QUERY.properties).includes(p.name), `alias ${p.name}`).toBe(!field(p, 'pathOnly') && (!field(p, 'source') || field(p, 'inAlias') === true));
        }
      }
    }
  });

  // Every filter of items with a flag (the period, paging and sort are not filters).
  const itemFilters = parameters('items').filter((p) => filterNames('items').includes(p.name) && field(p, 'flag') !== undefined);
  it('has the items filters to run (an empty it.each would pass with nothing tested)', () => {
    expect(itemFilters.map((p) => p.name)).toEqual(expect.arrayContaining(['sourceId', 'sourceType', 'orderId', 'country', 'currency']));
  });
  it.each(itemFilters.map((f) => [f.name, f] as const))('%s narrows the same rows in local mode, on the server and in API mode', async (name, filter) => {
    expect(VALUE_OF[name], `the test knows where a record shows ${name} (VALUE_OF above)`).toBeDefined();
    const found = all.map(VALUE_OF[name]!).find((v): v is string => v !== null)!;
    // Codes are matched whatever their case: asked in lower case, they find the data's.
    const value = filter.kind === 'codes' ? found.toLowerCase() : found;
    // A record's detailUrl carries the query's filters of the transactions (country, currency): its source's records as asked.
    const carried = filter.kind === 'codes' ? `&${name}=${found.toUpperCase()}` : '';
    const expected = all
      .filter((r) => VALUE_OF[name]!(r) === found)
      .map((r) => ({ ...r, source: { ...r.source, detailUrl: `${r.source.detailUrl}${carried}` } }));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    await expectEveryMode(name, filter, value, expected);
  });

  // As the look-ups ignore blanks around an id (`convx order ' o-1'`): ids and a source type are trimmed (codes are, code by code).
  const trimmed = itemFilters.filter((f) => f.kind === 'id' || f.kind === 'sourceType');
  it('has the filters of ids and the source type to pad with blanks', () => {
    expect(trimmed.map((p) => p.name)).toEqual(expect.arrayContaining(['sourceId', 'sourceType', 'contactId', 'orderId']));
  });
  it.each(trimmed.map((f) => [f.name, f] as const))('%s ignores blanks around its value, in local mode, on the server and in API mode', async (name, filter) => {
    const found = all.map(VALUE_OF[name]!).find((v): v is string => v !== null)!;
    const expected = all.filter((r) => VALUE_OF[name]!(r) === found);
    expect(expected.length).toBeGreaterThan(0);
    await expectEveryMode(name, filter, ` ${found}\t `, expected);
    // blanks alone are an empty value, refused in the same words on both sides
    const res = await app.inject({ method: 'GET', url: `/v1/conversions/items?${new URLSearchParams({ ...PERIOD, [name]: '  ' })}`, headers });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.body).toContain(`${name}: ${EMPTY_VALUE}`);
    const local = await cli(['items', '--data', SAMPLES, '--from', PERIOD.dateFrom, '--to', PERIOD.dateTo, flagName(field(filter, 'flag')!), '  ']);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain(`${FLAG_FOR_PARAMETER[name]}: ${EMPTY_VALUE}`);
  });

  /** The filter given value finds expected in local mode (the flag), on the server (the parameter) and in API mode, which prints what local mode prints. */
  async function expectEveryMode(name: string, filter: (typeof itemFilters)[number], value: string, expected: ConversionRecord[]): Promise<void> {
    const flag = flagName(field(filter, 'flag')!);
    // local mode, through the CLI flag
    const local = await kept(['items', '--data', SAMPLES, '--from', PERIOD.dateFrom, '--to', PERIOD.dateTo, flag, value, '--all', '-o', 'json']);
    expect(local.code, local.stderr).toBe(0);
    const localRows = (JSON.parse(local.stdout) as { conversions: ConversionRecord[] }).conversions;
    expect(localRows).toEqual(expected);
    // the server, through the query parameter
    const params = new URLSearchParams({ ...PERIOD, [name]: value, limit: '1000' });
    const res = await app.inject({ method: 'GET', url: `/v1/conversions/items?${params}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    expect((JSON.parse(res.body) as { conversions: ConversionRecord[] }).conversions).toEqual(expected);
    // API mode against the same server on loopback: the flag goes out as the parameter
    const api = await cli(
      ['items', '--api', `${url}/v1`, '--from', PERIOD.dateFrom, '--to', PERIOD.dateTo, flag, value, '--all', '-o', 'json'],
      { env: { CONVX_TOKEN: token } },
    );
    expect(api.code, api.stderr).toBe(0);
    expect(api.stdout).toBe(local.stdout);
  }
});

describe('the report filters, one table', () => {
  let served: ServedDataset;
  let app: FastifyInstance;
  let token: string;
  let url: string;

  beforeAll(async () => {
    served = await ServedDataset.load(SAMPLES, { poolSize: 2 });
    app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test', limits: { rateLimitPerMinute: 0 } });
    token = await signDevelopmentToken(SECRET, 'shop', '1h');
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app.close();
    await served.retire();
  });

  const VALUES: Record<string, string> = { country: 'cz', currency: 'czk', q: 'SALE' };
  // Every filter of the report (the period, paging and sort are not filters), with a flag.
  const reportFilters = parameters('report').filter((p) => filterNames('report').includes(p.name) && field(p, 'flag') !== undefined);

  it('knows a value for every report filter', () => {
    expect(reportFilters.length).toBeGreaterThanOrEqual(3);
    for (const p of reportFilters) expect(VALUES[p.name], `a value of ${p.name} in samples/shop (VALUES above)`).toBeDefined();
  });

  it.each(reportFilters.map((p) => [p.name, p] as const))('%s narrows the report alike in local mode, on the server and in API mode', async (name, p) => {
    const flag = flagName(field(p, 'flag')!);
    const period = ['--from', PERIOD.dateFrom, '--to', PERIOD.dateTo, '--all', '-o', 'json'];
    const unfiltered = await kept(['report', '--data', SAMPLES, ...period]);
    const local = await kept(['report', '--data', SAMPLES, ...period, flag, VALUES[name]!]);
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout).not.toBe(unfiltered.stdout);
    const rows = (JSON.parse(local.stdout) as { conversions: AggregateRow[] }).conversions;
    expect(rows.length).toBeGreaterThan(0);
    const api = await cli(['report', '--api', `${url}/v1`, ...period, flag, VALUES[name]!], { env: { CONVX_TOKEN: token } });
    expect(api.code, api.stderr).toBe(0);
    expect(api.stdout).toBe(local.stdout);
  });

  const refusable = (['report', 'items'] as const).flatMap((operation) =>
    parameters(operation)
      .filter((p) => INVALID[p.kind] !== undefined && field(p, 'flag') !== undefined)
      .map((p) => [operation, p.name, p] as const),
  );
  it('has a bad value to try for every kind that refuses one', () => {
    expect(refusable.map(([operation, name]) => `${operation} ${name}`)).toEqual(
      expect.arrayContaining(['report dateFrom', 'report limit', 'report sort', 'report country', 'items sourceType', 'items currency']),
    );
  });

  it.each(refusable)('%s %s: a bad value is refused once, by the one parser, in the same words on the server and the CLI', async (operation: Operation, name, p) => {
    const bad = INVALID[p.kind]!;
    const period = { ...PERIOD, [name]: bad };
    const res = await app.inject({ method: 'GET', url: `/v1/${operation === 'report' ? 'conversions' : 'conversions/items'}?${new URLSearchParams(period)}`, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode, res.body).toBe(400);
    const problems = (JSON.parse(res.body) as { errors: { parameter: string; message: string }[] }).errors;
    const problem = problems.find((e) => e.parameter === name)!;
    expect(problem, res.body).toBeDefined();
    const argv = [operation, '--data', SAMPLES, '--from', period.dateFrom, '--to', period.dateTo];
    if (name !== 'dateFrom' && name !== 'dateTo') argv.push(flagName(field(p, 'flag')!), bad);
    const local = await cli(argv);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain(`${FLAG_FOR_PARAMETER[name]}: ${problem.message}`);
  });

  it('a parsed query written back as parameters parses to the same query (API mode sends what the server parses)', () => {
    const today = new Date('2024-05-01T00:00:00Z');
    const report = parseReportQuery({ ...PERIOD, timeZone: 'europe/prague', country: 'cz,SK', currency: 'eur', q: 'sale', sort: '-name,conversionsNumber', limit: '7', offset: '3', compareTo: 'year' }, today);
    expect(parseReportQuery(formatQuery('report', report), today)).toEqual(report);
    for (const p of parameters('report')) expect(Object.keys(report), p.name).toContain(p.name);
    const items = parseItemsQuery({ ...PERIOD, timeZone: 'Asia/Kathmandu', sourceId: 'k-1', sourceType: 'campaign', smartflowId: 's', deliveryId: 'd', contactId: 'c', orderId: 'o', country: 'cz', currency: 'EUR,czk', sort: 'datetime', limit: '9', offset: '1' });
    expect(parseItemsQuery(formatQuery('items', items))).toEqual(items);
    for (const p of parameters('items')) if (!field(p, 'pathOnly')) expect(Object.keys(items), p.name).toContain(p.name);
  });
});
