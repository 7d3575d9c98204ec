/** The tracking lint of `convx validate` (docs/validation.md, "Tracking lint"): the rules alone, then a validation end to end, the flags and the profile setting. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLocalBackend } from '../src/local/open.js';
import type { Finding, ValidateResponse } from '../src/model/validation.js';
import { partLinks, shopQuery, templatePattern } from '../src/validation/tracking.js';
import { cli, csv, dataset, suiteThreadsOption } from './helpers.js';

describe('the rules alone', () => {
  it('finds hrefs with their lines, and URLs of a text part without trailing punctuation', () => {
    expect(partLinks('html', '<p>\n<a href="https://a.dev/x?utm_source=n&amp;b=1">A</a>\n\n<a href="{{ url }}">B</a></p>')).toEqual([
      { url: 'https://a.dev/x?utm_source=n&b=1', line: 2, liquid: false },
      { url: '{{ url }}', line: 4, liquid: true },
    ]);
    expect(partLinks('text', 'Sale: https://a.dev/s?utm_source=n.\nMore (https://a.dev/p?id={{ contact.contactId }})')).toEqual([
      { url: 'https://a.dev/s?utm_source=n', line: 1, liquid: false },
      { url: 'https://a.dev/p?id={{ contact.contactId }}', line: 2, liquid: true },
    ]);
  });

  it('counts a subdomain of a listed domain, nothing else', () => {
    expect(shopQuery('https://www.shop.dev/a?utm_source=n', ['shop.dev'])?.get('utm_source')).toBe('n');
    expect(shopQuery('https://SHOP.dev./a', ['shop.dev'])).toBeDefined();
    expect(shopQuery('https://notshop.dev/a', ['shop.dev'])).toBeUndefined();
    expect(shopQuery('mailto:a@shop.dev', ['shop.dev'])).toBeUndefined();
  });

  it('matches a rendered link to the template it came from', () => {
    const pattern = templatePattern('https://shop.dev/p?c={{ contact.contactId }}&utm_source=n');
    expect(pattern.test('https://shop.dev/p?c=c-1&utm_source=n')).toBe(true);
    expect(pattern.test('https://shop.dev/q?c=c-1&utm_source=n')).toBe(false);
  });
});

const CONTACTS = csv(
  ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists', 'ref'],
  [
    ['c1', 'a@shop.dev', 'Ann', 'cs', 'CZ', true, false, 'l1', 'spring'],
    ['c2', 'b@shop.dev', 'Bob', 'en', 'CZ', true, false, 'l1', 'spring'],
  ],
);
const UTM = 'utm_source=newsletter&amp;utm_medium=email&amp;utm_campaign=spring';
const UNSUBSCRIBE = '<a href="https://shop.dev/unsubscribe?utm_source=newsletter&amp;utm_medium=email&amp;utm_campaign=spring">Unsubscribe</a>';
const html = (body: string) => `<html><body>\n${body}\n${UNSUBSCRIBE}\n</body></html>`;
const cs = (body: string, text = 'Ahoj') => ({ language: 'cs', subject: 'Ahoj', html: html(body), text });
const en = (body: string, text = 'Hi') => ({ language: 'en', subject: 'Hi', html: html(body), text });

async function validate(body: unknown): Promise<ValidateResponse> {
  const backend = await openLocalBackend(dataset({ 'contacts.csv': CONTACTS }), { ...suiteThreadsOption(), require: ['contacts'] });
  try {
    return await backend.validateEmail(body);
  } finally {
    await backend.close();
  }
}
const tracked = (assets: unknown[], extra: Record<string, unknown> = {}) => ({
  name: 'Spring sale',
  permId: 'spring',
  audience: { lists: ['l1'] },
  assets,
  options: { trackingDomains: ['shop.dev'], sampleSize: 2 },
  ...extra,
});
const ofCode = (r: ValidateResponse, code: string): Finding[] => [...r.render.errors, ...r.render.warnings].filter((f) => f.code === code);

describe('a validation', () => {
  it('does not run without trackingDomains', async () => {
    const r = await validate({ audience: { lists: ['l1'] }, assets: [cs('<a href="https://shop.dev/a">A</a>'), en('')] });
    expect([...r.render.errors, ...r.render.warnings].filter((f) => f.code.startsWith('tracking_'))).toEqual([]);
  });

  it('passes links that carry every parameter with the delivery campaign, and ignores other domains', async () => {
    const r = await validate(tracked([cs(`<a href="https://www.shop.dev/a?${UTM}">A</a> <a href="https://other.dev/x">X</a>`), en('')]));
    expect([...r.render.errors, ...r.render.warnings].filter((f) => f.code.startsWith('tracking_'))).toEqual([]);
  });

  it('names the link, part, language and line of a missing parameter, in HTML and text', async () => {
    const r = await validate(tracked([cs('<p>x</p>\n<a href="https://shop.dev/a?utm_source=newsletter&amp;utm_campaign=spring">A</a>', 'Ahoj\nhttps://shop.dev/t.'), en('')]));
    const missing = ofCode(r, 'tracking_param_missing');
    expect(missing).toEqual([
      expect.objectContaining({ assetRef: 'inline:0', language: 'cs', field: 'html', line: 3 }),
      expect.objectContaining({ assetRef: 'inline:0', language: 'cs', field: 'text', line: 2 }),
    ]);
    expect(missing[0]!.message).toBe('link https://shop.dev/a?utm_source=newsletter&utm_campaign=spring in html line 3 of inline:0 (cs) lacks utm_medium');
    expect(missing[1]!.message).toContain('lacks utm_source, utm_medium, utm_campaign');
    expect(r.render.errors.map((f) => f.code)).toContain('tracking_param_missing');
  });

  it('compares utm_campaign with permId or name, and the other parameters across parts and languages', async () => {
    const r = await validate(
      tracked([cs(`<a href="https://shop.dev/a?${UTM.replace('=spring', '=summer')}">A</a>`), en(`<a href="https://shop.dev/b?${UTM.replace('=email', '=mail')}">B</a>`)]),
    );
    const mismatch = ofCode(r, 'tracking_param_mismatch');
    expect(mismatch).toHaveLength(1);
    expect(mismatch[0]!.message).toContain(`has utm_campaign=summer, not the delivery's permId "spring" or name "Spring sale"`);
    const inconsistent = ofCode(r, 'tracking_inconsistent');
    expect(inconsistent).toEqual([expect.objectContaining({ language: 'en', field: 'html', line: 2 })]);
    expect(inconsistent[0]!.message).toContain('has utm_medium=mail, but link https://shop.dev/a?');
    expect(r.render.warnings.map((f) => f.code)).toContain('tracking_inconsistent');
  });

  it('judges links filled in per recipient after rendering the samples, naming the contact and the template line', async () => {
    const r = await validate(
      tracked([cs('<a href="https://shop.dev/p?utm_source=newsletter&amp;utm_medium=email&amp;utm_campaign={{ contact.ref }}-{{ contact.contactId }}">P</a>'), en('')]),
    );
    const mismatch = ofCode(r, 'tracking_param_mismatch');
    expect(mismatch).toEqual([expect.objectContaining({ contactId: 'c1', language: 'cs', field: 'html', line: 2 })]);
    expect(mismatch[0]!.message).toContain('utm_campaign=spring-c1');
    expect(mismatch[0]!.message).toContain('rendered for contact c1 from https://shop.dev/p?');
    const fine = await validate(tracked([cs(`<a href="https://shop.dev/p?c={{ contact.contactId }}&amp;${UTM}">P</a>`), en('', 'https://shop.dev/t?id={{ contact.contactId }}')]));
    expect(ofCode(fine, 'tracking_param_missing')).toEqual([expect.objectContaining({ contactId: 'c2', language: 'en', field: 'text', line: 1 })]);
  });

  it('refuses a bad domain as an invalid request', async () => {
    const r = await validate(tracked([cs('')], { options: { trackingDomains: ['https://shop.dev'] } }));
    expect(r.render.errors).toEqual([expect.objectContaining({ code: 'invalid_request', field: 'options.trackingDomains' })]);
  });
});

describe('the CLI', () => {
  const dir = dataset({ 'contacts.csv': CONTACTS });
  const request = JSON.stringify(tracked([cs('<a href="https://shop.dev/a?utm_source=newsletter">A</a>'), en('')], { options: {} }));

  it('takes the domains and parameters from flags, else the parameters from the profile', async () => {
    const off = await cli(['validate', '-', '--data', dir, '-o', 'json'], { stdin: request });
    expect(off.code).toBe(0);
    const on = await cli(['validate', '-', '--data', dir, '-o', 'json', '--tracking-domains', 'shop.dev'], { stdin: request });
    expect(on.code).toBe(1);
    expect(JSON.stringify(JSON.parse(on.stdout).render.errors)).toContain('lacks utm_medium, utm_campaign');
    const onlySource = await cli(['validate', '-', '--data', dir, '-o', 'json', '--tracking-domains', 'shop.dev', '--tracking-params', 'utm_source'], { stdin: request });
    expect(onlySource.code).toBe(0);

    const home = mkdtempSync(join(tmpdir(), 'convx-tracking-'));
    mkdirSync(join(home, 'convx'));
    writeFileSync(join(home, 'convx', 'config.json'), JSON.stringify({ profiles: { default: { trackingParams: 'utm_source' } } }));
    const env = { XDG_CONFIG_HOME: home };
    expect((await cli(['validate', '-', '--data', dir, '--tracking-domains', 'shop.dev'], { stdin: request, env })).code).toBe(0);
    const set = await cli(['config', 'set', 'trackingParams', ' utm_source, utm_medium '], { env });
    expect(set.code).toBe(0);
    expect((await cli(['config', 'get', 'trackingParams'], { env })).stdout).toBe('utm_source,utm_medium\n');
    expect((await cli(['validate', '-', '--data', dir, '--tracking-domains', 'shop.dev'], { stdin: request, env })).code).toBe(1);
  });

  it('refuses a bad list naming its flag', async () => {
    const bad = await cli(['validate', '-', '--data', dir, '--tracking-domains', 'shop.dev/x'], { stdin: request });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--tracking-domains: "shop.dev/x" is not a domain name');
    expect((await cli(['validate', '-', '--data', dir, '--tracking-params', ','], { stdin: request })).stderr).toContain('--tracking-params: lists nothing');
  });
});
