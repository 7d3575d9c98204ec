/**
 * Issue 12, items 6-9 (support: which campaign produced this order?): `order` over every
 * date in both modes, `contact` by id, e-mail or client id with its deciding and
 * non-counting clicks, served activityUrl links that resolve, and unknown ids as
 * "not found" (exit 3, nothing on stdout).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv } from 'ajv';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { ServedDataset } from '../src/server/plugins.js';
import { cli, csv, SAMPLES, servedDataset, shop } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const SECRET = 'test-secret-that-is-long-enough';

/**
 * Contact c1 (ann@example.com, client id CL-1): order o1 on 2024-03-01, decided by the click
 * of 2024-02-25 on k3; the click of 2024-02-20 on k2 lost to it, the one of 2024-01-01 on k1
 * is 60 days before the order, the one of 2024-03-05 on k1 after it. Contact c2's order
 * o-old is from 2010, far outside any recent year; c3's order is cancelled; smartflow
 * node n1 (delivery d1) decides c3's o-sf.
 */
const data = () =>
  shop({
    orders: [
      { id: 'o1', contact: 'c1', at: '2024-03-01T10:00:00Z' },
      { id: 'o-old', contact: 'c2', at: '2010-06-01T10:00:00Z' },
      { id: 'o-cancel', contact: 'c3', at: '2024-03-10T10:00:00Z', status: 'cancelled' },
      { id: 'o-sf', contact: 'c3', at: '2024-04-10T10:00:00Z' },
    ],
    touches: [
      { contact: 'c1', at: '2024-01-01T10:00:00Z', source: 'k1' },
      { contact: 'c1', at: '2024-02-20T10:00:00Z', source: 'k2' },
      { contact: 'c1', at: '2024-02-25T10:00:00Z', source: 'k3' },
      { contact: 'c1', at: '2024-02-26T10:00:00Z', touch: 'open', source: 'k3' },
      { contact: 'c1', at: '2024-03-05T10:00:00Z', source: 'k1' },
      { contact: 'c2', at: '2010-05-30T10:00:00Z', source: 'k1' },
      { contact: 'c3', at: '2024-03-09T10:00:00Z', source: 'k2' },
      { contact: 'c3', at: '2024-04-09T10:00:00Z', type: 'smartflow', source: 'n1' },
    ],
    sources: [
      ['campaign', 'k1', 'Spring sale', 'k1', '', '', '', '', ''],
      ['campaign', 'k2', 'Newsletter', 'k2', '', '', '', '', ''],
      ['campaign', 'k3', 'Clearance', 'k3', '', '', '', '', ''],
      ['smartflow', 'n1', 'Welcome: reminder', '', 'sf1', 'Welcome', 'd1', 'Reminder', ''],
    ],
    files: {
      'contacts.csv': csv(
        ['contact_id', 'client_contact_id', 'email', 'first_name', 'surname'],
        [
          ['c1', 'CL-1', 'Ann@Example.com', 'Ann', 'Novak'],
          ['c2', 'CL-2', 'bob@example.com', 'Bob', 'Dvorak'],
          ['c3', 'CL-3', 'cyril@example.com', 'Cyril', 'Marek'],
        ],
      ),
    },
  });

let dir: string;
let server: RunningServer;
let token: string;
beforeAll(async () => {
  dir = data();
  server = await startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
  token = await signDevelopmentToken(SECRET, 'default', '1h');
});
afterAll(async () => {
  await server?.close();
});

/** Local mode on dir opened once and lent to each command (kept-backends.ts): the tests are about what the look-ups print. */
const kept = keptBackends();
const local = (argv: string[]) => kept([...argv, '--data', dir]);
const api = (argv: string[]) => cli([...argv, '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: token } });

interface Click {
  datetime: string;
  source: { type: string; id: string; name: string };
  orderIds: string[];
  reason: string | null;
}

describe('convx contact (item 7)', () => {
  it('finds a contact by contact id, e-mail in any case, or client contact id', async () => {
    for (const [key, matchedBy] of [['c1', 'contactId'], ['aNN@example.COM', 'email'], ['CL-1', 'clientContactId']] as const) {
      const run = await local(['contact', key, '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      const body = JSON.parse(run.stdout);
      expect(body.contact).toEqual({ contactId: 'c1', clientContactId: 'CL-1', email: 'Ann@Example.com', firstName: 'Ann', surname: 'Novak' });
      expect(body.matchedBy).toBe(matchedBy);
    }
  });

  it('lists the conversions with their sources, the deciding click and why the others did not count', async () => {
    const body = JSON.parse((await local(['contact', 'c1', '-o', 'json'])).stdout);
    expect(body.conversions.map((r: { orderId: string; source: { id: string } }) => [r.orderId, r.source.id])).toEqual([['o1', 'k3']]);
    const clicks = body.clicks as Click[];
    expect(clicks.map((c) => [c.datetime, c.source.id, c.orderIds])).toEqual([
      ['2024-01-01T10:00:00.000Z', 'k1', []],
      ['2024-02-20T10:00:00.000Z', 'k2', []],
      ['2024-02-25T10:00:00.000Z', 'k3', ['o1']],
      ['2024-03-05T10:00:00.000Z', 'k1', []],
    ]);
    expect(clicks[0]!.reason).toMatch(/^outside the 30-day window: the next order, o1, came 60\.0 days later/);
    expect(clicks[1]!.reason).toMatch(/^a later click won order o1 \(2024-02-25T10:00:00\.000Z on campaign k3\)/);
    expect(clicks[2]!.reason).toBeNull();
    expect(clicks[3]!.reason).toMatch(/^after the order/);
    expect(body.orders).toEqual([{ orderId: 'o1', datetime: '2024-03-01T10:00:00.000Z', conversion: true, reasons: [] }]);
    // every order of the contact, with why one is not a conversion; a click before a cancelled order says so
    const c3 = JSON.parse((await local(['contact', 'c3', '-o', 'json'])).stdout);
    expect(c3.orders.map((o: { orderId: string; conversion: boolean }) => [o.orderId, o.conversion])).toEqual([['o-cancel', false], ['o-sf', true]]);
    expect(c3.orders[0].reasons).toEqual(['the order is cancelled (status "cancelled"), so neither it nor its refunds count']);
    expect(c3.clicks[0].reason).toMatch(/order o-cancel is cancelled/);
  });

  it('prints a card on a terminal and one row per click in csv/tsv', async () => {
    const card = await kept(['contact', 'c1', '--data', dir], { tty: true, env: { NO_COLOR: '1' } });
    expect(card.stdout).toContain('Contact c1 / CL-1 (Ann Novak) <Ann@Example.com>');
    expect(card.stdout).toMatch(/2024-03-01T10:00:00\.000Z {2}o1 {2}a conversion of campaign "Clearance" \(k3\)/);
    expect(card.stdout).toMatch(/2024-02-25T10:00:00\.000Z {2}campaign "Clearance" \(k3\) {2}decided o1/);
    expect(card.stdout).toMatch(/did not count: outside the 30-day window/);
    const tsv = (await local(['contact', 'c1', '-o', 'tsv'])).stdout.trim().split('\n');
    expect(tsv[0]).toBe('datetime\tsourceType\tsourceId\tsourceName\tcounted\torderIds\treason');
    expect(tsv).toHaveLength(5);
    expect(tsv[3]).toBe('2024-02-25T10:00:00.000Z\tcampaign\tk3\tClearance\ttrue\to1\t');
  });

  it('works in API mode through GET /v1/contacts/{contact}/conversions, printing what local mode prints', async () => {
    for (const format of ['json', 'tsv', 'table']) {
      const [a, b] = await Promise.all([local(['contact', 'ann@example.com', '-o', format]), api(['contact', 'ann@example.com', '-o', format])]);
      expect(b.code, b.stderr).toBe(0);
      expect(b.stdout).toBe(a.stdout);
    }
  });
});

describe('unknown ids are "not found", exit 3, nothing on stdout (item 9)', () => {
  it('order', async () => {
    for (const run of [await local(['order', 'no-such-order']), await local(['order', 'no-such-order', '-o', 'json']), await api(['order', 'no-such-order'])]) {
      expect(run.code).toBe(3);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/order no-such-order is not in the (dataset|API's data)/);
    }
    // with a period too
    for (const period of [await local(['order', 'no-such-order', '--from', '2024-01-01', '--to', '2024-01-31']), await api(['order', 'no-such-order', '--from', '2024-01-01', '--to', '2024-01-31'])]) {
      expect([period.code, period.stdout]).toEqual([3, '']);
    }
    // API mode with a period that misses a known order says so, as local mode does
    const outside = await api(['order', 'o1', '--from', '2024-01-01', '--to', '2024-01-31']);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toBe(
      'convx: error: order o1 is not among the conversions of 2024-01-01..2024-01-31:\n' +
        '  - the order is a conversion, but none of its transactions falls within 2024-01-01..2024-01-31 (the order is from 2024-03-01)\n',
    );
    expect((await local(['order', 'o1', '--from', '2024-01-01', '--to', '2024-01-31'])).stderr).toBe(outside.stderr);
    // -o json and -o markdown carry why, with a period too, the same in both modes (and the data version of the page)
    for (const format of ['json', 'markdown']) {
      const period = ['order', 'o1', '--from', '2024-01-01', '--to', '2024-01-31', '-o', format];
      const [fromFiles, fromApi] = [await local(period), await api(period)];
      expect(fromApi.stdout).toBe(fromFiles.stdout);
      expect(fromFiles.stdout).toContain('none of its transactions falls within 2024-01-01..2024-01-31 (the order is from 2024-03-01)');
    }
    const cancelledJson = JSON.parse((await local(['order', 'o-cancel', '--from', '2024-01-01', '--to', '2024-12-31', '-o', 'json'])).stdout);
    expect(cancelledJson.reasons).toEqual([expect.stringMatching(/^the order is cancelled/)]);
    expect(cancelledJson.paging.dataVersion).toEqual(expect.any(String));
    // an order that exists but is not a conversion keeps exit 1 and says why
    const cancelled = await local(['order', 'o-cancel']);
    expect(cancelled.code).toBe(1);
    expect(cancelled.stderr).toMatch(/order o-cancel is not a conversion:\n.*cancelled/);
  });

  it('contact', async () => {
    for (const run of [await local(['contact', 'nobody@example.com']), await api(['contact', 'nobody@example.com'])]) {
      expect(run.code).toBe(3);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/no contact nobody@example\.com in the/);
    }
  });

  it('drill on a source id the data does not hold suggests the closest known ids', async () => {
    const run = await local(['drill', 'k4', '--from', '2024-01-01', '--to', '2024-04-30']);
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/convx: error: no source k4 in the data/);
    expect(run.stderr).toMatch(/did you mean k1 "Spring sale", k2 "Newsletter", k3 "Clearance"\?/);
    // A bad flag is a usage error (2) before the target is looked for, as for items.
    const badFlag = await local(['drill', 'k4', '--from', '2024-01-01', '--to', '2024-04-30', '--limit', 'abc']);
    expect([badFlag.code, badFlag.stdout]).toEqual([2, '']);
    expect(badFlag.stderr).toMatch(/--limit: "abc" must be a whole number/);
    const url = await local(['drill', '/v1/campaigns/k9/conversions', '--from', '2024-01-01', '--to', '2024-04-30']);
    expect([url.code, url.stdout]).toEqual([3, '']);
    const delivery = await local(['drill', '/v1/deliveries/sf1/d2/conversions', '--from', '2024-01-01', '--to', '2024-04-30']);
    expect(delivery.code).toBe(3);
    expect(delivery.stderr).toMatch(/no delivery d2.*\n.*did you mean d1/);
    const wrongType = await local(['drill', 'automation:k1', '--from', '2024-01-01', '--to', '2024-04-30']);
    expect(wrongType.code).toBe(3);
    expect(wrongType.stderr).toMatch(/it is campaign:k1/);
    // API mode: the server's resolver (GET /v1/ids/{id}) answers what local mode says
    const viaApi = await api(['drill', 'k4', '--from', '2024-01-01', '--to', '2024-04-30']);
    expect([viaApi.code, viaApi.stdout, viaApi.stderr]).toEqual([3, '', run.stderr]);
    // a known source without conversions in the period is still an empty result, exit 0
    for (const empty of [await local(['drill', 'k1', '--from', '2024-01-01', '--to', '2024-01-31', '-o', 'json']), await api(['drill', 'k1', '--from', '2024-01-01', '--to', '2024-01-31', '-o', 'json'])]) {
      expect(empty.code).toBe(0);
      expect(JSON.parse(empty.stdout).paging.totalCount).toBe(0);
    }
  });
});

describe('convx order over every date in both modes (item 6)', () => {
  it('finds an order years before the last 365 days in API mode, as local mode does', async () => {
    const [a, b] = await Promise.all([local(['order', 'o-old', '-o', 'json']), api(['order', 'o-old', '-o', 'json'])]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toBe(a.stdout);
    expect(JSON.parse(b.stdout).conversions[0].datetime).toBe('2010-06-01T10:00:00.000Z');
  });

  it('says why an order is not a conversion in API mode too', async () => {
    const run = await api(['order', 'o-cancel']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/order o-cancel is not a conversion:\n.*cancelled \(status "cancelled"\)/);
  });

  it.each([
    ['a problem saying no route', 'problem'],
    ["a plain 404, as a framework or a proxy answers", 'plain'],
  ])('against a server without the look-up route (%s), searches back a year at a time and says how far it looked', async (_label, kind) => {
    const requests: string[] = [];
    const scripted = createServer((req: IncomingMessage, res: ServerResponse) => {
      requests.push(req.url ?? '');
      const path = (req.url ?? '').split('?')[0]!;
      if (path.startsWith('/v1/conversions/orders/')) {
        if (kind === 'plain') res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
        else res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'urn:convx:problem:not-found', title: 'Not found', status: 404, detail: `no route for GET ${path}` }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ conversions: [], paging: { start: 0, count: 0, totalCount: 0 } }));
    });
    await new Promise<void>((resolve) => scripted.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(scripted.address() as AddressInfo).port}/v1`;
      const run = await cli(['order', 'o-9', '--api', url], { env: { CONVX_TOKEN: token } });
      expect(run.code).toBe(3);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/order o-9 is not among the API's conversions of \d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2} \(the API has no look-up by order id, so convx searched 10 years back/);
      expect(requests.filter((r) => r.startsWith('/v1/conversions/items'))).toHaveLength(10);
    } finally {
      await new Promise((resolve) => scripted.close(resolve));
    }
  });
});

describe('served activityUrl links resolve (item 8)', () => {
  let app: FastifyInstance;
  let served: ServedDataset;
  let doc: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>; components: { schemas: object } };
  beforeAll(async () => {
    served = await ServedDataset.load(dir);
    app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test' });
    doc = JSON.parse((await app.inject({ method: 'GET', url: '/openapi.json' })).body);
  });
  afterAll(async () => {
    await app?.close();
    await served?.retire();
  });
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

  /** The body matches the schema the OpenAPI document declares for the route and status. */
  function declared(template: string, status: number, body: unknown): void {
    const media = doc.paths[template]?.get?.responses[String(status)]?.content;
    expect(media, `${template} ${status} is declared`).toBeDefined();
    const schema = (media!['application/json'] ?? media!['application/problem+json'])!.schema;
    const check = new Ajv({ strict: false, validateFormats: false }).compile({ ...schema, components: doc.components });
    expect(check(body), JSON.stringify(check.errors)).toBe(true);
  }

  it('every activityUrl of a served items page answers 200 with the touches of that source', async () => {
    const page = JSON.parse((await get('/v1/conversions/items?dateFrom=2000-01-01&dateTo=2030-12-31&limit=1000')).body);
    expect(page.conversions.length).toBe(3);
    const templates: Record<string, string> = {
      campaign: '/v1/campaigns/{campaignId}/recipients/{contactId}/activity',
      smartflow: '/v1/deliveries/{smartflowId}/{deliveryId}/recipients/{contactId}/activity',
    };
    for (const record of page.conversions) {
      const res = await get(record.activityUrl);
      expect(res.statusCode, `${record.activityUrl}: ${res.body}`).toBe(200);
      const body = JSON.parse(res.body);
      declared(templates[record.source.type === 'smartflow' ? 'smartflow' : 'campaign']!, 200, body);
      expect(body.contactId).toBe(record.contactId);
      // the click that decided the record is among them, and nothing of another source
      expect(body.touches).toContainEqual({ datetime: record.attribution.datetime, touch: 'click', source: { type: record.source.type, id: record.source.id, name: record.source.name } });
      expect(body.touches.every((t: { source: { id: string } }) => t.source.id === record.source.id)).toBe(true);
    }
    const k3 = JSON.parse((await get('/v1/campaigns/k3/recipients/c1/activity')).body);
    expect(k3.touches.map((t: { touch: string }) => t.touch)).toEqual(['click', 'open']);
  });

  it('answers all three shapes of activityUrl (a campaign or automation, a smartflow node, a delivery) on the samples', async () => {
    const samples = await ServedDataset.load(SAMPLES);
    const sampleApp = await buildApp({ dataset: () => samples, verify: createVerifier({ secret: SECRET }), log: () => undefined, version: 'test', limits: { rateLimitPerMinute: 0 } });
    try {
      const shopToken = await signDevelopmentToken(SECRET, 'shop', '1h');
      const fetch = (url: string) => sampleApp.inject({ method: 'GET', url, headers: { authorization: `Bearer ${shopToken}` } });
      const page = JSON.parse((await fetch('/v1/conversions/items?dateFrom=2024-01-01&dateTo=2024-12-31&limit=1000')).body);
      const shapes = new Map<string, { activityUrl: string; contactId: string; attribution: { datetime: string } }>();
      for (const record of page.conversions) {
        const shape = `${record.source.type} ${record.activityUrl.replace(/\/[^/]+/g, (part: string) => (/^\/(v1|campaigns|deliveries|recipients|activity)$/.test(part) ? part : '/ID'))}`;
        if (!shapes.has(shape)) shapes.set(shape, record);
      }
      expect([...shapes.keys()].sort()).toEqual([
        'automation /v1/campaigns/ID/recipients/ID/activity',
        'campaign /v1/campaigns/ID/recipients/ID/activity',
        'smartflow /v1/deliveries/ID/ID/recipients/ID/activity',
        'smartflow /v1/deliveries/ID/recipients/ID/activity',
      ]);
      for (const record of shapes.values()) {
        const res = await fetch(record.activityUrl);
        expect(res.statusCode, `${record.activityUrl}: ${res.body}`).toBe(200);
        const body = JSON.parse(res.body);
        expect(body.contactId).toBe(record.contactId);
        expect(body.touches.map((t: { datetime: string }) => t.datetime)).toContain(record.attribution.datetime);
      }
    } finally {
      await sampleApp.close();
      await samples.retire();
    }
  });

  it('answers a contact without touches of the source, an unknown order or contact with a 404 problem the document declares', async () => {
    for (const [url, template] of [
      ['/v1/campaigns/k2/recipients/c2/activity', '/v1/campaigns/{campaignId}/recipients/{contactId}/activity'],
      ['/v1/conversions/orders/nope', '/v1/conversions/orders/{orderId}'],
      ['/v1/contacts/nope/conversions', '/v1/contacts/{contact}/conversions'],
    ] as const) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      declared(template, 404, JSON.parse(res.body));
    }
    for (const [url, template] of [
      ['/v1/conversions/orders/o-old', '/v1/conversions/orders/{orderId}'],
      ['/v1/conversions/orders/o-cancel', '/v1/conversions/orders/{orderId}'],
      ['/v1/contacts/CL-1/conversions', '/v1/contacts/{contact}/conversions'],
    ] as const) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      declared(template, 200, JSON.parse(res.body));
    }
    expect((await app.inject({ method: 'GET', url: '/v1/contacts/c1/conversions' })).statusCode).toBe(403);
  });
});

describe("convx contact of a later row of an order id (found by a tester)", () => {
  /** Order o-7 has two rows: c-7's of 03-15, after c-7's click on k-2, counts; c-8's of 03-16, after c-8's click on a-1, is a later row and is not read. */
  const twin = servedDataset(() =>
    shop({
      orders: [
        { id: 'o-7', contact: 'c-7', at: '2024-03-15T00:00:00Z' },
        { id: 'o-7', contact: 'c-8', at: '2024-03-16T00:00:00Z' },
      ],
      touches: [
        { contact: 'c-7', at: '2024-03-14T00:00:00Z', source: 'k-2' },
        { contact: 'c-8', at: '2024-03-15T00:00:00Z', type: 'automation', source: 'a-1' },
      ],
    }),
  );

  it("says the contact's row is a later row of the order id and whose first row counts, for the order and the click, in both modes", async () => {
    const [a, b] = await Promise.all([twin.local(['contact', 'c-8', '-o', 'json']), twin.api(['contact', 'c-8', '-o', 'json'])]);
    expect([b.code, b.stdout]).toEqual([a.code, a.stdout]);
    expect(a.code, a.stderr).toBe(0);
    const body = JSON.parse(a.stdout);
    expect(body.orders).toEqual([
      {
        orderId: 'o-7',
        datetime: '2024-03-16T00:00:00.000Z',
        conversion: false,
        reasons: ["this is a later row of order o-7, which is not read: where one order id has several order rows the earliest counts, here contact c-7's of 2024-03-15T00:00:00.000Z"],
      },
    ]);
    expect(body.clicks.map((c: Click) => c.reason)).toEqual([
      "the contact's row of order o-7 (2024-03-16T00:00:00.000Z) is a later row of that order id, which is not read: its first row, contact c-7's of 2024-03-15T00:00:00.000Z, counts",
    ]);
    // the first row's contact: o-7 is its conversion, decided by its click
    const first = JSON.parse((await twin.local(['contact', 'c-7', '-o', 'json'])).stdout);
    expect(first.orders).toEqual([{ orderId: 'o-7', datetime: '2024-03-15T00:00:00.000Z', conversion: true, reasons: [] }]);
    expect(first.clicks.map((c: Click) => c.orderIds)).toEqual([['o-7']]);
  });
});

describe('a click just outside the 30-day window (found by a tester)', () => {
  /** c-1's click on k-1 is 30 days and 1 ms before order o-1; c-2's on k-2 30 days, 1 h, 2 min and 30 s before o-2. */
  const edge = servedDataset(() =>
    shop({
      orders: [
        { id: 'o-1', contact: 'c-1', at: '2024-03-31T00:00:00.001Z' },
        { id: 'o-2', contact: 'c-2', at: '2024-03-31T01:02:30Z' },
      ],
      touches: [
        { contact: 'c-1', at: '2024-03-01T00:00:00Z', source: 'k-1' },
        { contact: 'c-2', at: '2024-03-01T00:00:00Z', source: 'k-2' },
      ],
    }),
  );

  it('says how far past the window it is, never "30.0 days", for the order and the click, in both modes', async () => {
    for (const [id, contact, past] of [['o-1', 'c-1', '30 days and 1 ms'], ['o-2', 'c-2', '30 days and 1 h 2 min']]) {
      const order = await Promise.all([edge.local(['order', id!, '-o', 'json']), edge.api(['order', id!, '-o', 'json'])]);
      expect(order[1].stdout).toBe(order[0].stdout);
      expect(JSON.parse(order[0].stdout).reasons).toEqual([
        `the contact's last click before the order was 2024-03-01T00:00:00.000Z on campaign k-${id!.slice(2)}, ${past} earlier: outside the 30-day window`,
      ]);
      const card = await Promise.all([edge.local(['contact', contact!, '-o', 'json']), edge.api(['contact', contact!, '-o', 'json'])]);
      expect(card[1].stdout).toBe(card[0].stdout);
      expect(JSON.parse(card[0].stdout).clicks[0].reason).toBe(`outside the 30-day window: the next order, ${id}, came ${past} later`);
    }
  });
});
