/**
 * The items id filters are one table (src/model/parameters.ts): every row must
 * work as a CLI flag, as a query parameter of the server (schema and answer),
 * in API mode's query string, and as the local SQL filter, with the same rows
 * from each. A row added to the table is tested here without more code.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/commands/index.js';
import { flagName, ITEM_ID_FILTERS } from '../src/model/parameters.js';
import { ALIAS_QUERY, ITEMS_QUERY } from '../src/model/schemas.js';
import type { ConversionRecord } from '../src/model/types.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, SAMPLES } from './helpers.js';

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
};

describe('the items id filters, one table', () => {
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

  it('every row is a flag of items, a parameter of the server schema (and of the aliases when it says so)', () => {
    const items = COMMANDS.find((c) => c.name === 'items')!;
    const flags = (items.options ?? []).map((o) => o.flags);
    for (const filter of ITEM_ID_FILTERS) {
      expect(VALUE_OF[filter.name], `the test knows where records show ${filter.name}`).toBeDefined();
      expect(flags).toContain(filter.flag);
      expect(Object.keys(ITEMS_QUERY.properties)).toContain(filter.name);
      expect(Object.keys(ALIAS_QUERY.properties).includes(filter.name)).toBe(filter.alias);
    }
  });

  it.each(ITEM_ID_FILTERS.map((f) => [f.name, f] as const))('%s narrows the same rows in local mode, on the server and in API mode', async (name, filter) => {
    const value = all.map(VALUE_OF[name]!).find((v): v is string => v !== null)!;
    const expected = all.filter((r) => VALUE_OF[name]!(r) === value);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    const flag = flagName(filter.flag);
    // local mode, through the CLI flag
    const local = await cli(['items', '--data', SAMPLES, '--from', PERIOD.dateFrom, '--to', PERIOD.dateTo, flag, value, '--all', '-o', 'json']);
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
  });
});
