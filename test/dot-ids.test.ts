/**
 * Ids `.` and `..` in URLs (DESIGN 4.14: ids in URLs are percent-encoded): a path segment that
 * is exactly `.` or `..` is written `%2E` / `%2E%2E`, which no URL parser takes for a dot
 * segment to remove, in the links a page prints (detailUrl, activityUrl) and in API mode's
 * requests. Local and API mode print the same; a printed detailUrl drills in both.
 */
import { get } from 'node:http';
import { describe, expect, it } from 'vitest';
import { urlSegment } from '../src/model/url.js';
import { csv, servedDataset, shop } from './helpers.js';

/**
 * Contact c-20 orders `..` after a click on campaign `..`; contact `.` orders `.` after a click on
 * smartflow node n-dot of smartflow `.` and delivery `..`.
 */
const served = servedDataset(() =>
  shop({
    orders: [
      { id: '..', contact: 'c-20', at: '2024-03-02T10:00:00Z' },
      { id: '.', contact: '.', at: '2024-03-03T10:00:00Z' },
    ],
    touches: [
      { contact: 'c-20', at: '2024-03-01T10:00:00Z', source: '..' },
      { contact: '.', at: '2024-03-01T10:00:00Z', type: 'smartflow', source: 'n-dot' },
    ],
    sources: [['smartflow', 'n-dot', 'Dot node', '', '.', 'Dots', '..', 'Dot delivery', '']],
    files: { 'contacts.csv': csv(['contact_id', 'email'], [['c-20', 'c20@example.com'], ['.', 'dot@example.com']]) },
  }),
);

/** The status of a GET of path from the server with its token, the path sent byte for byte (a URL string would be parsed). */
function statusOf(path: string): Promise<number | undefined> {
  const { hostname, port } = new URL(served.url());
  return new Promise((resolve, reject) => {
    get({ hostname, port, path, headers: { authorization: `Bearer ${served.token()}` } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
}

const period = ['--from', '2024-03-01', '--to', '2024-03-31'];

/** Runs argv in both modes: each exits with code (0 unless said) and API mode prints what local mode prints. */
async function same(argv: string[], code = 0): Promise<string> {
  const local = await served.local(argv);
  const api = await served.api(argv);
  expect(local.code, `local ${argv.join(' ')}: ${local.stderr}`).toBe(code);
  expect(api.code, `api ${argv.join(' ')}: ${api.stderr}`).toBe(code);
  expect(api.stdout, argv.join(' ')).toBe(local.stdout);
  expect(api.stderr, argv.join(' ')).toBe(local.stderr);
  return local.stdout;
}

describe('ids . and .. in URLs', () => {
  it('urlSegment writes a dot segment percent-encoded and every other id as url_encode does', () => {
    expect(urlSegment('.')).toBe('%2E');
    expect(urlSegment('..')).toBe('%2E%2E');
    expect(urlSegment('...')).toBe('...');
    expect(urlSegment('a b/c')).toBe('a%20b%2Fc');
  });

  it('order and contact look-ups of . and .. print the same in local and API mode', async () => {
    for (const argv of [['order', '..'], ['order', '.'], ['contact', 'c-20'], ['contact', '.']]) {
      for (const format of ['json', 'table']) await same([...argv, '-o', format]);
    }
    // `..` is an order, not a contact: not found (exit 3) in both, in the same words
    await same(['contact', '..'], 3);
    const card = JSON.parse(await same(['order', '..', '-o', 'json'])) as { conversions: { contactId: string }[] };
    expect(card.conversions.map((r) => r.contactId)).toEqual(['c-20']);
  });

  it('detailUrl and activityUrl hold %2E and %2E%2E, and a printed detailUrl drills in both modes', async () => {
    const report = JSON.parse(await same(['report', ...period, '-o', 'json'])) as { conversions: { id: string; source: { detailUrl: string } }[] };
    const urls = Object.fromEntries(report.conversions.map((r) => [r.id, r.source.detailUrl]));
    expect(urls['..']).toBe('/v1/campaigns/%2E%2E/conversions?sourceType=campaign&sourceId=..&dateFrom=2024-03-01&dateTo=2024-03-31');
    expect(urls['n-dot']).toBe('/v1/deliveries/%2E/%2E%2E/conversions?sourceType=smartflow&sourceId=n-dot&dateFrom=2024-03-01&dateTo=2024-03-31');
    const items = JSON.parse(await same(['items', ...period, '-o', 'json'])) as { conversions: { orderId: string; source: { detailUrl: string }; activityUrl: string }[] };
    const activity = Object.fromEntries(items.conversions.map((r) => [r.orderId, r.activityUrl]));
    expect(activity['..']).toBe('/v1/campaigns/%2E%2E/recipients/c-20/activity');
    expect(activity['.']).toBe('/v1/deliveries/%2E/%2E%2E/recipients/%2E/activity');
    for (const r of items.conversions) expect(r.source.detailUrl).toBe(urls[r.orderId === '..' ? '..' : 'n-dot']);
    for (const [id, url] of Object.entries(urls)) {
      const drilled = JSON.parse(await same(['drill', url!, '-o', 'json'])) as { conversions: { source: { id: string }; orderId: string }[] };
      expect(drilled.conversions.map((r) => [r.source.id, r.orderId])).toEqual([[id, id === '..' ? '..' : '.']]);
    }
  });

  it('the served links answer what they name', async () => {
    const items = JSON.parse((await served.local(['items', ...period, '-o', 'json'])).stdout) as { conversions: { source: { detailUrl: string }; activityUrl: string }[] };
    expect(items.conversions).toHaveLength(2);
    for (const r of items.conversions) {
      for (const link of [r.source.detailUrl, r.activityUrl]) {
        // fetch's WHATWG URL would take %2E%2E for a dot segment and remove it
        expect(await statusOf(link), link).toBe(200);
      }
    }
  });
});
