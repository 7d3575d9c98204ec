/**
 * Issue 22, items 1 and 2 (support): one resolver of ids for `order`, `contact` and `drill`
 * (what an id the command did not find names instead, with the command to run; the nearest ids
 * with their names; blanks and case; drill by smartflow id, delivery id or a source's name), the
 * same in API mode through GET /v1/ids/{id}; and several ids at once (arguments, --stdin), one
 * answer each in every format, exit 3 only when any is not found.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { cli, csv, dataset, scripted, servedDataset, shop, withBackend, type OrderRow, type TouchRow } from './helpers.js';
import { contactsCarrying } from '../src/backend.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer } from '../src/server/start.js';

/**
 * Contact c-1 (Ann Novak) orders o-1 after a click on campaign k-1 "Spring sale" and o-3,
 * cancelled; contact c-2 orders o-2 after a click on smartflow node n-1 (smartflow sf-1,
 * delivery d-1). Campaign k-2 and automation a-1 share the name "Twin".
 */
const order = (id: string, contact: string, day: string, status?: string): OrderRow => ({ id, contact, at: `2024-${day}T10:00:00Z`, ...(status ? { status } : {}) });
const click = (contact: string, day: string, source: string, type?: string): TouchRow => ({ contact, at: `2024-${day}T10:00:00Z`, source, ...(type ? { type } : {}) });
const campaign = (type: string, id: string, name: string) => [type, id, name, id, '', '', '', '', ''];
const data = () =>
  shop({
    orders: [order('o-1', 'c-1', '03-01'), order('o-2', 'c-2', '03-05'), order('o-3', 'c-1', '03-10', 'cancelled')],
    touches: [click('c-1', '02-25', 'k-1'), click('c-2', '03-04', 'n-1', 'smartflow'), click('c-2', '01-04', 'k-2')],
    sources: [
      campaign('campaign', 'k-1', 'Spring sale'),
      campaign('campaign', 'k-2', 'Twin'),
      campaign('automation', 'a-1', 'Twin'),
      ['smartflow', 'n-1', 'Welcome: first', '', 'sf-1', 'Welcome series', 'd-1', 'Welcome e-mail 1', ''],
    ],
    files: {
      'contacts.csv': csv(['contact_id', 'client_contact_id', 'email', 'first_name', 'surname'], [['c-1', 'CL-1', 'ann@example.com', 'Ann', 'Novak'], ['c-2', 'CL-2', 'bob@example.com', 'Bob', 'Dvorak']]),
    },
  });

const served = servedDataset(data);
const local = (argv: string[], stdin?: string) => served.local(argv, {}, stdin);
const api = served.api;
const PERIOD = ['--from', '2024-01-01', '--to', '2024-03-31'];

/** Both modes print the same bytes, an error's words of where it looked too (stdout holds them: several ids' `error`). */
async function both(argv: string[], stdin?: string) {
  const [a, b] = await Promise.all([local(argv, stdin), api(argv, stdin)]);
  expect(b.code, b.stderr).toBe(a.code);
  expect(b.stdout).toBe(a.stdout);
  expect(b.stderr).toBe(a.stderr);
  return a;
}

describe('ids of any kind (item 1)', () => {
  it('says which kind an id is when the wrong command got it, with the command to run, in both modes', async () => {
    const cases: [string[], RegExp, string][] = [
      [['order', 'c-1'], /^convx: error: order c-1 is not in the dataset\n/, 'c-1 is a contact (Ann Novak): convx contact c-1'],
      [['order', 'ann@example.com'], /order ann@example\.com is not/, 'ann@example.com is the e-mail of contact c-1 (Ann Novak): convx contact c-1'],
      [['drill', 'c-1'], /^convx: error: no source c-1 in the data/, 'c-1 is a contact (Ann Novak): convx contact c-1'],
      [['drill', 'o-2'], /no source o-2/, 'o-2 is an order: convx order o-2'],
      [['contact', 'k-1'], /no contact k-1 in the dataset/, 'k-1 is a campaign ("Spring sale"): convx drill k-1'],
      [['contact', 'sf-1'], /no contact sf-1/, 'sf-1 is a smartflow ("Welcome series"): convx drill smartflow:sf-1'],
      [['order', 'CL-2'], /order CL-2/, 'CL-2 is the client contact id of contact c-2 (Bob Dvorak): convx contact c-2'],
      // a detailUrl's path id that names no campaign, smartflow or delivery but something else (it said "known source ids: none")
      [['drill', '/v1/campaigns/o-2/conversions'], /^convx: error: no campaign o-2 in the data\n/, 'o-2 is an order: convx order o-2'],
      [['drill', '/v1/campaigns/c-1/conversions'], /no campaign c-1 in the data/, 'c-1 is a contact (Ann Novak): convx contact c-1'],
      [['drill', '/v1/deliveries/k-1/d-9/conversions'], /no smartflow k-1 in the data\n/, 'k-1 is a campaign ("Spring sale"): convx drill k-1'],
      // a source of the data, of another kind than the path's: not "no row of sources has it"
      [['drill', '/v1/campaigns/n-1/conversions'], /^convx: error: no campaign n-1 in the data\n/, 'n-1 is a smartflow ("Welcome: first"): convx drill n-1'],
    ];
    for (const [argv, message, hint] of cases) {
      const run = await both(argv);
      expect([run.code, run.stdout], argv.join(' ')).toEqual([3, '']);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).toContain(`\nhint: ${hint}\n`);
    }
  });

  it('suggests the nearest ids with their names, any case', async () => {
    const upper = await both(['order', 'O-1']);
    expect(upper.code).toBe(3);
    expect(upper.stderr).toMatch(/hint: did you mean o-1, o-2, o-3\?/);
    const contact = await both(['contact', 'c-9']);
    expect(contact.stderr).toMatch(/hint: did you mean c-1 \(Ann Novak\), c-2 \(Bob Dvorak\)\?/);
    const source = await both(['drill', 'k-9', ...PERIOD]);
    expect(source.stderr).toMatch(/hint: did you mean k-1 "Spring sale", k-2 "Twin"/);
    // a part of a source's name, or a name misspelt: the source of that name first, found by its name, not its id
    for (const name of ['SPRING', 'Sprin sale']) {
      const named = await both(['drill', name, ...PERIOD]);
      expect(named.code, name).toBe(3);
      expect(named.stderr, name).toMatch(/\nhint: did you mean k-1 "Spring sale"[,?]/);
    }
    // nothing near: the sources the data holds, with their names
    const far = await both(['drill', 'zzzzzzzzzzzz', ...PERIOD]);
    expect(far.stderr).toMatch(/hint: known source ids: a-1 "Twin", k-1 "Spring sale", k-2 "Twin", n-1 "Welcome: first"\n/);
  });

  it('ignores blanks around an id', async () => {
    const [plain, blank] = await Promise.all([local(['order', 'o-1', '-o', 'json']), local(['order', ' o-1 ', '-o', 'json'])]);
    expect(blank.code, blank.stderr).toBe(0);
    expect(blank.stdout).toBe(plain.stdout);
    const drill = await local(['drill', ' k-1', ...PERIOD, '-o', 'json']);
    expect(drill.code, drill.stderr).toBe(0);
    expect(JSON.parse(drill.stdout).conversions.map((r: { orderId: string }) => r.orderId)).toEqual(['o-1']);
  });

  it('drills a smartflow by the smartflowId the report shows, a delivery id and a source by its name', async () => {
    for (const target of ['smartflow:sf-1', 'sf-1', 'd-1']) {
      const run = await both(['drill', target, ...PERIOD, '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).conversions.map((r: { orderId: string; source: { smartflowId: string } }) => [r.orderId, r.source.smartflowId])).toEqual([['o-2', 'sf-1']]);
    }
    // a name in any case (as -q finds names)
    for (const name of ['Spring sale', 'spring sale', 'SPRING SALE']) {
      const named = await both(['drill', name, ...PERIOD, '-o', 'json']);
      expect(named.code, named.stderr).toBe(0);
      expect(JSON.parse(named.stdout).conversions.map((r: { source: { id: string } }) => r.source.id)).toEqual(['k-1']);
    }
    // a name whose capital letter lowers to two characters in JavaScript (İ): found as given, and in any case
    const turkish = shop({ orders: [order('o-1', 'c-1', '03-01')], touches: [click('c-1', '02-25', 'k-1')], sources: [campaign('campaign', 'k-1', 'İSTANBUL Sale')] });
    for (const name of ['İSTANBUL Sale', 'istanbul sale']) {
      const run = await cli(['drill', name, '--data', turkish, ...PERIOD, '-o', 'json']);
      expect(run.code, `${name}: ${run.stderr}`).toBe(0);
    }
    // the name two sources carry, in another case: which ids carry it
    expect((await both(['drill', 'twin', ...PERIOD])).stderr).toMatch(/^convx: error: "twin" names 2 sources: automation a-1 "Twin", campaign k-2 "Twin"\n/);
    // a name two sources carry: which ids carry it
    const twin = await both(['drill', 'Twin', ...PERIOD]);
    expect([twin.code, twin.stdout]).toEqual([2, '']);
    expect(twin.stderr).toMatch(/"Twin" names 2 sources: automation a-1 "Twin", campaign k-2 "Twin"\nhint: drill one of them by its id: convx drill a-1/);
    // a typed id of another type still says what it is
    const typed = await both(['drill', 'automation:k-1', ...PERIOD]);
    expect(typed.stderr).toMatch(/no automation k-1 in the data\nhint: it is campaign:k-1/);
  });

  it('drills a detailUrl typed by hand (its path alone): a known one lists, an unknown campaign, smartflow or delivery is "not found" with the nearest ids, in both modes', async () => {
    const listed = async (url: string) => {
      const run = await both(['drill', url, ...PERIOD, '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout).conversions.map((r: { orderId: string }) => r.orderId);
    };
    expect(await listed('/v1/campaigns/k-1/conversions')).toEqual(['o-1']);
    expect(await listed('/v1/deliveries/sf-1/d-1/conversions')).toEqual(['o-2']);
    const cases: [string, string][] = [
      ['/v1/campaigns/kb-1/conversions', 'no campaign kb-1 in the data (no click and no row of sources has it)\nhint: did you mean k-1 "Spring sale", a-1 "Twin", k-2 "Twin"?'],
      ['/v1/deliveries/sf-9/conversions', 'no smartflow sf-9 in the data (no click and no row of sources has it)\nhint: did you mean smartflow:sf-1 "Welcome series"?'],
      ['/v1/deliveries/sf-1/d-9/conversions', 'no delivery d-9 in the data (no click and no row of sources has it)\nhint: did you mean d-1 "Welcome e-mail 1" (smartflow sf-1)?'],
    ];
    for (const [url, message] of cases) {
      const run = await both(['drill', url, ...PERIOD]);
      expect([run.code, run.stdout], url).toEqual([3, '']);
      expect(run.stderr, url).toContain(`convx: error: ${message}`);
    }
  });

  it("a whole detailUrl of another host lists its path where convx reads, and a warning says that host is not asked", async () => {
    const path = '/v1/campaigns/k-1/conversions';
    const elsewhere = await local(['drill', `http://user:secret@example.com:8080${path}`, ...PERIOD, '-o', 'json']);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(JSON.parse(elsewhere.stdout).conversions.map((r: { orderId: string }) => r.orderId)).toEqual(['o-1']);
    expect(elsewhere.stderr).toMatch(/^warning: the detailUrl is of http:\/\/example\.com:8080, which drill does not ask: its path is drilled on the dataset /);
    expect(elsewhere.stderr).not.toContain('secret');
    // nor in the explanation of an empty result (its source and the command to try)
    const empty = await local(['drill', `http://user:secret@example.com:8080${path}`, '--from', '2030-01-01', '--to', '2030-01-31']);
    expect(empty.stderr).toMatch(/try: convx drill/);
    expect(empty.stderr).not.toContain('secret');
    // API mode: a detailUrl of the API it asks is its own; of another host, the warning names the API
    const own = await api(['drill', `${served.url()}${path}`, ...PERIOD, '-o', 'json']);
    expect(own.stderr).not.toMatch(/warning/);
    const other = await api(['drill', `https://example.com${path}`, ...PERIOD, '-o', 'json']);
    expect(other.stdout).toBe(own.stdout);
    expect(other.stderr).toMatch(/^warning: the detailUrl is of https:\/\/example\.com, which drill does not ask: its path is drilled on the API at http:\/\/127\.0\.0\.1:/);
    // a path alone asks no host: no warning
    expect((await local(['drill', path, ...PERIOD, '-o', 'json'])).stderr).not.toMatch(/warning/);
  });

  it('against an API without GET /v1/ids/{id}, says what it said before', async () => {
    const old = await scripted((req, res) => {
      const path = (req.url ?? '').split('?')[0]!;
      if (path.startsWith('/v1/ids/')) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ conversions: [], paging: { start: 0, count: 0, totalCount: 0 } }));
    });
    try {
      const run = await cli(['drill', 'k-9', ...PERIOD, '--api', old.url], { env: { CONVX_TOKEN: served.token() } });
      expect([run.code, run.stdout]).toEqual([3, '']);
      expect(run.stderr).toBe("convx: error: no source k-9 among the API's conversions of any date\nhint: known source ids: none\n");
      expect(old.requests.map((r) => r.url.split('?')[0])).toContain('/v1/ids/k-9');
    } finally {
      await old.close();
    }
  });

  it('answers GET /v1/ids/{id} with the shape the OpenAPI document declares, scoped to the token', async () => {
    const doc = await (await fetch(`${served.url()}/openapi.json`)).json();
    const schema = doc.paths['/v1/ids/{id}'].get.responses['200'].content['application/json'].schema;
    const check = new Ajv({ strict: false, validateFormats: false }).compile({ ...schema, components: doc.components });
    const get = (id: string, auth = true) => fetch(`${served.url()}/v1/ids/${encodeURIComponent(id)}`, auth ? { headers: { authorization: `Bearer ${served.token()}` } } : {});
    const res = await get('Spring sale');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(check(body), JSON.stringify(check.errors)).toBe(true);
    expect(body.matches).toEqual([{ kind: 'source', by: 'name', id: 'k-1', type: 'campaign', name: 'Spring sale', smartflowId: null }]);
    const unknown = await (await get('nothing-like-it-at-all')).json();
    expect([unknown.matches, unknown.nearest]).toEqual([[], []]);
    expect((await get('c-1', false)).status).toBe(403);
  });
});

describe('GET /v1/ids/{id} of two plugins', () => {
  it("answers a plugin's token from its own data only: another plugin's order, contact, e-mail and source are neither matches nor nearest ids", async () => {
    const dir = dataset({
      'orders.csv': csv(['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'], [
        ['a', 'o-a1', 'c-a1', '2024-03-01T10:00:00Z', 'EUR', '10', '12'],
        ['b', 'o-b1', 'c-b1', '2024-03-01T10:00:00Z', 'EUR', '10', '12'],
      ]),
      'touches.csv': csv(['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [
        ['a', 'c-a1', '2024-02-28T10:00:00Z', 'click', 'campaign', 'k-a1'],
        ['b', 'c-b1', '2024-02-28T10:00:00Z', 'click', 'campaign', 'k-b1'],
      ]),
      'sources.csv': csv(['plugin_id', 'source_type', 'source_id', 'name'], [['a', 'campaign', 'k-a1', 'Spring of a'], ['b', 'campaign', 'k-b1', 'Spring of b']]),
      'contacts.csv': csv(['plugin_id', 'contact_id', 'email'], [['a', 'c-a1', 'ann@a.example'], ['b', 'c-b1', 'bob@b.example']]),
    });
    const secret = 'ids-two-plugins-secret-long-enough';
    const server = await startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret }, log: () => undefined, version: 'test' });
    try {
      const tokens = { a: await signDevelopmentToken(secret, 'a', '1h'), b: await signDevelopmentToken(secret, 'b', '1h') };
      const resolve = async (plugin: 'a' | 'b', id: string) => {
        const res = await fetch(`${server.url}/v1/ids/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${tokens[plugin]}` } });
        expect(res.status).toBe(200);
        return (await res.json()) as { matches: { id: string }[]; nearest: { id: string }[]; sources: { id: string }[] };
      };
      for (const id of ['o-b1', 'c-b1', 'bob@b.example', 'k-b1', 'Spring of b']) {
        expect((await resolve('b', id)).matches.length, `b's own ${id}`).toBeGreaterThan(0);
        const seen = await resolve('a', id);
        expect(seen.matches, `a asking ${id}`).toEqual([]);
        const named = JSON.stringify([seen.nearest, seen.sources]);
        expect(named, `a asking ${id}`).not.toMatch(/-b1|b\.example|of b/);
      }
      // a's own ids are there for a: its nearest ids hold them, so the check above can see a leak.
      expect(JSON.stringify(await resolve('a', 'o-b1'))).toMatch(/o-a1/);
    } finally {
      await server.close();
    }
  });
});

interface Answer {
  id: string;
  found: boolean;
  error: string | null;
  result: { orderId?: string; conversions?: { orderId: string }[]; reasons?: string[]; contact?: { contactId: string } } | null;
}

describe('several ids at once (item 2)', () => {
  it('json: one answer each, in the order given; exit 3 when any is not found, named on stderr', async () => {
    const run = await both(['order', 'o-1', 'nope', 'o-2', '-o', 'json']);
    expect(run.code).toBe(3);
    const answers = JSON.parse(run.stdout) as Answer[];
    expect(answers.map((a) => [a.id, a.found, a.result?.conversions?.map((c) => c.orderId) ?? null])).toEqual([
      ['o-1', true, ['o-1']],
      ['nope', false, null],
      ['o-2', true, ['o-2']],
    ]);
    expect(answers[1]!.error).toBe('order nope is not in the dataset');
    expect(run.stderr).toMatch(/^convx: error: order nope is not in the dataset\n/);
    expect(run.stderr).toMatch(/\nconvx: not found: 1 of 3: nope\n$/);
  });

  it('an id not found has the same error on stdout in both modes, with a period too (order) and for a contact', async () => {
    for (const argv of [
      ['order', 'o-2', 'o-9999', '-o', 'jsonl'],
      ['order', 'o-2', 'o-9999', ...PERIOD, '-o', 'jsonl'],
      ['contact', 'c-1', 'nobody', '-o', 'json'],
    ]) {
      const [a, b] = await Promise.all([local(argv), api(argv)]);
      expect([a.code, b.code], argv.join(' ')).toEqual([3, 3]);
      expect(b.stdout, argv.join(' ')).toBe(a.stdout);
    }
    const lines = (await api(['order', 'o-2', 'o-9999', '-o', 'jsonl'])).stdout.trim().split('\n').map((l) => JSON.parse(l) as Answer);
    expect(lines[1]).toEqual({ id: 'o-9999', found: false, error: 'order o-9999 is not in the dataset', result: null });
  });

  it("prints each id's error and hint as one id's are printed, under --quiet too", async () => {
    const one = await local(['order', 'o-1x', '--quiet']);
    expect(one.stderr).toMatch(/^convx: error: order o-1x is not in the dataset\nhint: did you mean o-1\b/);
    const several = await local(['order', 'o-1x', 'o-1', '--quiet', '-o', 'json']);
    expect(several.stderr).toBe(`${one.stderr}convx: not found: 1 of 2: o-1x\n`);
  });

  it('an order that is not a conversion is a finding (exit 1) with its reasons, not "not found"', async () => {
    const run = await both(['order', 'o-1', 'o-3', '-o', 'jsonl']);
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Answer);
    expect(lines.map((a) => [a.id, a.found])).toEqual([['o-1', true], ['o-3', true]]);
    expect(lines[1]!.error).toMatch(/^order o-3 is not a conversion/);
    expect(lines[1]!.result?.reasons?.[0]).toMatch(/cancelled/);
    expect(run.stderr).toMatch(/order o-3 is not a conversion/);
    expect(run.stderr).not.toMatch(/not found/);
  });

  it('reads ids from stdin, one a line, blanks ignored; csv rows are led by the id asked', async () => {
    const run = await both(['order', '--stdin', '-o', 'csv', '--fields', 'query,orderId,source.id'], 'o-2\n\n  o-1  \n');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('query,orderId,source.id\no-2,o-2,n-1\no-1,o-1,k-1\n');
    const none = await local(['order', '--stdin'], '\n \n');
    expect([none.code, none.stdout]).toEqual([2, '']);
    expect(none.stderr).toMatch(/give an order id: stdin had none/);
  });

  it('contact takes several too; a table prints one card after another', async () => {
    const run = await both(['contact', 'c-1', 'BOB@example.com', '-o', 'jsonl']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').map((l) => (JSON.parse(l) as Answer).result?.contact?.contactId)).toEqual(['c-1', 'c-2']);
    const cards = await local(['contact', 'c-1', 'c-2', '-o', 'table']);
    expect(cards.code).toBe(0);
    expect(cards.stdout).toMatch(/^Contact c-1 \/ CL-1 \(Ann Novak\)[\s\S]*\n\nContact c-2 \/ CL-2 \(Bob Dvorak\)/);
    // -o markdown: each order's card to paste, and the reasons of one that is not a conversion
    const markdown = await both(['order', 'o-1', 'o-3', '-o', 'markdown']);
    expect(markdown.code).toBe(1);
    expect(markdown.stdout).toMatch(/^\*\*Order o-1: a conversion of campaign "Spring sale"\*\*\n[\s\S]*\n\n\*\*Order o-3 is not a conversion\*\*\n\n- the order is cancelled/);
    const single = await local(['order', 'o-1', '-o', 'table']);
    const two = await local(['order', 'o-1', 'o-2', '-o', 'table']);
    expect(two.stdout.startsWith(single.stdout)).toBe(true);
  });
});

describe('sources of one id and several types (found by a tester)', () => {
  /** Campaign, automation and smartflow x-1, all named "Same": c-1 orders o-1 after the campaign's click, c-2 o-2 after the automation's, c-3 o-3 after the smartflow's. */
  const shared = servedDataset(() =>
    shop({
      orders: [order('o-1', 'c-1', '03-10'), order('o-2', 'c-2', '03-10'), order('o-3', 'c-3', '03-10')],
      touches: [click('c-1', '03-09', 'x-1'), click('c-2', '03-09', 'x-1', 'automation'), click('c-3', '03-09', 'x-1', 'smartflow')],
      sources: [campaign('campaign', 'x-1', 'Same'), campaign('automation', 'x-1', 'Same'), ['smartflow', 'x-1', 'Same', '', '', '', '', '', '']],
    }),
  );
  const twice = async (argv: string[]) => {
    const [a, b] = await Promise.all([shared.local(argv), shared.api(argv)]);
    expect([b.code, b.stdout, b.stderr], argv.join(' ')).toEqual([a.code, a.stdout, a.stderr]);
    return a;
  };
  const MARCH = ['--from', '2024-03-01', '--to', '2024-03-31'];
  const drilled = async (argv: string[]) => {
    const run = await twice(['drill', ...argv, '-o', 'json']);
    expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
    return (JSON.parse(run.stdout).conversions as { orderId: string; source: { type: string } }[]).map((r) => `${r.orderId} ${r.source.type}`);
  };

  it("drills every report row's detailUrl to exactly the row's records, in both modes", async () => {
    const report = JSON.parse((await shared.local(['report', ...MARCH, '-o', 'json'])).stdout) as { conversions: { source: { type: string; detailUrl: string }; conversionsNumber: number }[] };
    expect(report.conversions.map((r) => [r.source.type, r.conversionsNumber]).sort()).toEqual([['automation', 1], ['campaign', 1], ['smartflow', 1]]);
    for (const row of report.conversions) expect(await drilled([row.source.detailUrl]), row.source.detailUrl).toEqual([`o-${['campaign', 'automation', 'smartflow'].indexOf(row.source.type) + 1} ${row.source.type}`]);
    // the detail of an order's card, as the tester drilled it
    const detail = JSON.parse((await shared.local(['order', 'o-2', '-o', 'json'])).stdout).conversions[0].source.detailUrl as string;
    expect(detail).toMatch(/^\/v1\/campaigns\/x-1\/conversions\?sourceType=automation&sourceId=x-1&/);
    expect(await drilled([detail, ...MARCH])).toEqual(['o-2 automation']);
  });

  it('drills TYPE:ID of each type; a bare id or a name the sources share is a usage error naming them', async () => {
    expect(await drilled(['campaign:x-1', ...MARCH])).toEqual(['o-1 campaign']);
    expect(await drilled(['automation:x-1', ...MARCH])).toEqual(['o-2 automation']);
    expect(await drilled(['smartflow:x-1', ...MARCH])).toEqual(['o-3 smartflow']);
    for (const target of ['x-1', 'Same']) {
      const run = await twice(['drill', target, ...MARCH]);
      expect([run.code, run.stdout]).toEqual([2, '']);
      expect(run.stderr).toBe(
        `convx: error: "${target}" names 3 sources: automation x-1 "Same", campaign x-1 "Same", smartflow x-1 "Same"\nhint: drill one of them by its type and id: convx drill automation:x-1\n`,
      );
    }
    // a type without an id is a usage error, not an id nobody has
    for (const target of ['automation:', 'campaign: ']) {
      const run = await twice(['drill', target, ...MARCH]);
      expect([run.code, run.stderr]).toEqual([2, `convx: error: "${target.trim()}" names no id after its type: give ${target.split(':')[0]}:ID, or the id alone\n`]);
    }
    // what the id is, to another look-up: each source with the command that drills it alone
    const other = await twice(['order', 'x-1']);
    expect(other.stderr).toContain('\nhint: x-1 is an automation ("Same"): convx drill automation:x-1\n      x-1 is a campaign ("Same"): convx drill campaign:x-1\n');
  });

  it('GET /v1/ids/{id} names every source of the id', async () => {
    const res = await fetch(`${shared.url()}/v1/ids/x-1`, { headers: { authorization: `Bearer ${shared.token()}` } });
    const body = (await res.json()) as { matches: { kind: string; type: string | null }[] };
    expect(body.matches.filter((m) => m.kind === 'source').map((m) => m.type)).toEqual(['automation', 'campaign', 'smartflow']);
  });
});

describe("a contact's first row, and a key several contacts carry (found by a tester)", () => {
  /**
   * Contact c-3 has two rows: the first (CL3, three@example.com, Cy First) is the one read, the
   * later (CL3-LATER, later@example.com, Cyril Later) is not. c-4 carries c-2's e-mail in another
   * case, c-5 c-2's client contact id; c-6's later row repeats its first row's keys.
   */
  const people = servedDataset(() =>
    shop({
      orders: [order('o-2', 'c-2', '03-10'), order('o-3', 'c-3', '03-10')],
      touches: [click('c-2', '03-09', 'k-1'), click('c-3', '03-09', 'k-1')],
      files: {
        'contacts.csv': csv(['contact_id', 'client_contact_id', 'email', 'first_name', 'surname'], [
          ['c-2', 'CL2', 'two@example.com', 'Bob', 'Dvorak'],
          ['c-3', 'CL3', 'three@example.com', 'Cy', 'First'],
          ['c-3', 'CL3-LATER', 'later@example.com', 'Cyril', 'Later'],
          ['c-4', 'CL4', 'Two@Example.com', 'Dan', 'Four'],
          ['c-5', 'CL2', 'five@example.com', 'Eve', 'Five'],
          ['c-6', 'CL6', 'six@example.com', 'Sy', 'Six'],
          ['c-6', 'CL6', 'SIX@example.com', 'Sy', 'Sixth'],
          ['c-6', 'CL6', 'old.six@example.com', 'Sy', 'Six'],
          ['c-6', 'CL6', 'Old.Six@Example.com', 'Sy', 'Six'],
        ]),
      },
    }),
  );
  const twice = async (argv: string[]) => {
    const [a, b] = await Promise.all([people.local(argv), people.api(argv)]);
    expect([b.code, b.stdout, b.stderr], argv.join(' ')).toEqual([a.code, a.stdout, a.stderr]);
    return a;
  };

  it("finds a contact by its first row's e-mail and client contact id only, and shows that row, in both modes", async () => {
    const first = { contactId: 'c-3', clientContactId: 'CL3', email: 'three@example.com', firstName: 'Cy', surname: 'First' };
    for (const key of ['c-3', 'THREE@example.com', 'CL3']) {
      const run = await twice(['contact', key, '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).contact).toEqual(first);
    }
    // a later row's key finds nothing, and the hint says where it is (found by a tester): in any case for an e-mail
    for (const [key, what] of [['later@example.com', 'e-mail'], ['LATER@Example.com', 'e-mail'], ['CL3-LATER', 'client contact id']]) {
      const run = await twice(['contact', key!]);
      expect([run.code, run.stdout], key).toEqual([3, '']);
      expect(run.stderr).toBe(
        `convx: error: no contact ${key} in the dataset (looked for a contact id, an e-mail address and a client contact id)\nhint: ${key} is the ${what} on a later row of contact c-3 (Cy First), which look-ups do not read (a contact is its first row): convx contact c-3\n`,
      );
    }
    // a later row that repeats its first row's keys adds nothing: the contact is found by them
    const six = await fetch(`${people.url()}/v1/ids/six%40example.com`, { headers: { authorization: `Bearer ${people.token()}` } });
    expect(((await six.json()) as { matches: { by: string; id: string }[] }).matches.map((m) => [m.by, m.id])).toEqual([['email', 'c-6']]);
    expect(JSON.parse((await twice(['contact', 'CL6', '-o', 'json'])).stdout).contact.surname).toBe('Six');
    // later rows of one address in two cases are one match, one hint line (found by a reviewer)
    const old = await twice(['contact', 'OLD.SIX@example.com']);
    expect(old.stderr.split('\n').filter((line) => line.includes('on a later row of contact c-6'))).toHaveLength(1);
    // the other look-ups say where a later row's key is too
    expect((await twice(['order', 'later@example.com'])).stderr).toContain('\nhint: later@example.com is the e-mail on a later row of contact c-3 (Cy First),');
    expect((await twice(['drill', 'CL3-LATER'])).stderr).toContain('\nhint: CL3-LATER is the client contact id on a later row of contact c-3 (Cy First),');
    const resolved = await fetch(`${people.url()}/v1/ids/later%40example.com`, { headers: { authorization: `Bearer ${people.token()}` } });
    expect(((await resolved.json()) as { matches: unknown[] }).matches).toEqual([
      { kind: 'contact', by: 'laterEmail', id: 'c-3', type: null, name: 'Cy First', smartflowId: null },
    ]);
    // the resolver's name of the contact is the first row's too
    expect((await twice(['order', 'c-3'])).stderr).toContain('\nhint: c-3 is a contact (Cy First): convx contact c-3\n');
  });

  it("the local backend's own look-up of a key's contacts gives the resolver's matches of that key and kind, in any case and with blanks", async () => {
    const keys = ['two@example.com', 'TWO@EXAMPLE.COM', ' two@example.com ', 'CL2', 'cl2', 'three@example.com', 'later@example.com', 'CL3-LATER', 'six@example.com', 'old.six@example.com', 'CL6', 'c-2', 'nobody', ''];
    await withBackend(people.dir(), async (backend) => {
      const viaResolver = { resolve: (id: string) => backend.resolve(id) };
      for (const key of keys) {
        for (const by of ['email', 'clientContactId'] as const) {
          const own = await contactsCarrying(backend, key, by);
          expect(own, `${key} ${by}`).toEqual(await contactsCarrying(viaResolver, key, by));
        }
      }
      expect((await contactsCarrying(backend, 'Two@example.com', 'email')).contacts.map((m) => m.id)).toEqual(['c-2', 'c-4']);
    });
  });

  it('an e-mail or a client contact id several contacts carry is a usage error naming their ids, in both modes', async () => {
    const cases: [string, string][] = [
      ['two@example.com', 'convx: error: "two@example.com" is the e-mail of 2 contacts: c-2 (Bob Dvorak), c-4 (Dan Four)\nhint: look one of them up by its contact id: convx contact c-2\n'],
      ['CL2', 'convx: error: "CL2" is the client contact id of 2 contacts: c-2 (Bob Dvorak), c-5 (Eve Five)\nhint: look one of them up by its contact id: convx contact c-2\n'],
    ];
    for (const [key, stderr] of cases) {
      const run = await twice(['contact', key, '-o', 'json']);
      expect([run.code, run.stdout, run.stderr], key).toEqual([2, '', stderr]);
    }
    // by contact id each is itself
    expect(JSON.parse((await twice(['contact', 'c-4', '-o', 'json'])).stdout).contact.email).toBe('Two@Example.com');
  });

  it('among several keys, one several contacts carry is its own failed answer: the others are answered, exit 2, in both modes', async () => {
    const run = await twice(['contact', 'c-3', 'two@example.com', 'c-4', '-o', 'jsonl']);
    expect(run.code).toBe(2);
    const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { id: string; found: boolean; error: string | null; result: { contact: { contactId: string } } | null });
    expect(answers.map((a) => [a.id, a.found, a.error, a.result?.contact.contactId ?? null])).toEqual([
      ['c-3', true, null, 'c-3'],
      ['two@example.com', true, '"two@example.com" is the e-mail of 2 contacts: c-2 (Bob Dvorak), c-4 (Dan Four)', null],
      ['c-4', true, null, 'c-4'],
    ]);
    expect(run.stderr).toBe(
      'convx: error: "two@example.com" is the e-mail of 2 contacts: c-2 (Bob Dvorak), c-4 (Dan Four)\nhint: look one of them up by its contact id: convx contact c-2\nconvx: of several contacts: 1 of 3: two@example.com\n',
    );
    // a key not found as well: exit 3, each said
    const both = await twice(['contact', 'CL2', 'nobody@example.com', 'c-2', '-o', 'csv']);
    expect(both.code).toBe(3);
    expect(both.stdout.split('\n').slice(1).filter(Boolean).every((line) => line.startsWith('c-2,'))).toBe(true);
    expect(both.stderr).toContain('convx: not found: 1 of 3: nobody@example.com\nconvx: of several contacts: 1 of 3: CL2\n');
  });

  it('GET /v1/contacts/{key}/conversions of such a key is a 409 naming the contacts, never one of them picked', async () => {
    const get = (key: string) => fetch(`${people.url()}/v1/contacts/${encodeURIComponent(key)}/conversions`, { headers: { authorization: `Bearer ${people.token()}` } });
    for (const [key, matchedBy, contactIds] of [['TWO@example.com', 'email', ['c-2', 'c-4']], ['CL2', 'clientContactId', ['c-2', 'c-5']]] as const) {
      const answer = await get(key);
      expect(answer.status, key).toBe(409);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const what = matchedBy === 'email' ? 'the e-mail address' : 'the client contact id';
      expect(await answer.json()).toEqual({
        type: 'urn:convx:problem:ambiguous-key',
        title: 'The key names several contacts',
        status: 409,
        detail: `"${key}" is ${what} of 2 contacts: ${contactIds.join(', ')}; look one of them up by its contact id`,
        matchedBy,
        contactIds,
      });
    }
    // a contact id, and an e-mail of one contact alone, are answered
    expect((await get('c-2')).status).toBe(200);
    expect((await get('three@example.com')).status).toBe(200);
  });
});
