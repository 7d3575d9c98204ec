/** Tracking lint of issue 20 (docs/validation.md, "Tracking lint"): the rule alone, the request's options, then through `convx validate`. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRACKING_PARAMS, normalizeRequest, type Finding } from '../src/model/validation.js';
import type { ResolvedAsset } from '../src/validation/delivery.js';
import { campaignValues, htmlLinks, isOwnHost, MAX_FINDINGS_PER_CODE, textLinks, trackingFindings } from '../src/validation/tracking.js';
import { cli, csv, dataset, tempDir } from './helpers.js';

const TRACKING = { domains: ['shop.example.com'], params: DEFAULT_TRACKING_PARAMS };
const asset = (html: string, text?: string, language = 'en'): ResolvedAsset => ({ ref: `inline:${language}`, language, content: { subject: 'Hi', html, ...(text ? { text } : {}) } });
const utm = (campaign = 'spring-sale', source = 'email') => `utm_source=${source}&utm_medium=email&utm_campaign=${campaign}`;
const codes = (findings: Finding[]) => findings.map((f) => f.code);

describe('links and domains', () => {
  it('finds the links of an HTML part with their lines, and the URLs of a text part without trailing punctuation', () => {
    expect(htmlLinks('<p>a</p>\n<a href=" https://x.dev/1 ">1</a>\n\n<AREA HREF="https://x.dev/{{ id }}">')).toEqual([
      { href: 'https://x.dev/1', line: 2, templated: false },
      { href: 'https://x.dev/{{ id }}', line: 4, templated: true },
    ]);
    expect(textLinks('See https://x.dev/a?b=1.\nor (https://x.dev/c), thanks')).toEqual([
      { href: 'https://x.dev/a?b=1', line: 1, templated: false },
      { href: 'https://x.dev/c', line: 2, templated: false },
    ]);
  });

  it('keeps a template tag inside a URL of a text part, blanks and all, and marks the URL as filled in', () => {
    expect(textLinks('Picks: https://x.dev/p?id={{ contact.contactId }}&utm_source=email.\nhttps://x.dev/q?c={% if a %}1{% endif %} and {x}')).toEqual([
      { href: 'https://x.dev/p?id={{ contact.contactId }}&utm_source=email', line: 1, templated: true },
      { href: 'https://x.dev/q?c={% if a %}1{% endif %}', line: 2, templated: true },
    ]);
  });

  it('counts a domain and its subdomains as own, nothing else', () => {
    expect(isOwnHost('shop.example.com', ['shop.example.com'])).toBe(true);
    expect(isOwnHost('WWW.Shop.Example.com.', ['shop.example.com'])).toBe(true);
    expect(isOwnHost('evilshop.example.com', ['shop.example.com'])).toBe(false);
    expect(isOwnHost('example.com', ['shop.example.com'])).toBe(false);
  });

  it("takes the delivery's permId, name and the name's slugs as its campaign", () => {
    expect(campaignValues({ name: 'Jarní výprodej 2025!', permId: 'd-17' })).toEqual(['d-17', 'Jarní výprodej 2025!', 'jarni-vyprodej-2025', 'jarni_vyprodej_2025']);
    expect(campaignValues({})).toEqual([]);
  });
});

describe('the rule', () => {
  it('says nothing without tracking domains, and nothing about links elsewhere or unsubscribe links', () => {
    const a = asset('<a href="https://shop.example.com/x">x</a>');
    expect(trackingFindings([a], [], {})).toEqual([]);
    const b = asset('<a href="https://other.org/x">x</a><a href="https://shop.example.com/unsubscribe?c=1">u</a><a href="https://shop.example.com/account?action=unsubscribe">u2</a><a href="/relative">r</a>');
    expect(trackingFindings([b], [], { tracking: TRACKING })).toEqual([]);
  });

  it('tracking_param_missing: an own link without a parameter, naming what is missing, with its part and line', () => {
    const a = asset(`<p>x</p>\n<a href="https://shop.example.com/a?${utm()}">a</a>\n<a href="https://www.shop.example.com/b?utm_source=email">b</a>`, `Shop: https://shop.example.com/t?${utm()}`);
    const found = trackingFindings([a], [], { tracking: TRACKING });
    expect(found).toEqual([
      expect.objectContaining({ code: 'tracking_param_missing', assetRef: 'inline:en', language: 'en', field: 'html', line: 3 }),
    ]);
    expect(found[0]!.message).toContain('html line 3: https://www.shop.example.com/b?utm_source=email has no utm_medium, utm_campaign');
  });

  it('tracking_param_missing: an empty value counts as missing', () => {
    const found = trackingFindings([asset(`<a href="https://shop.example.com/a?utm_source=&utm_medium=email&utm_campaign=spring-sale">a</a>`)], [], { tracking: TRACKING });
    expect(found).toEqual([expect.objectContaining({ code: 'tracking_param_missing', line: 1 })]);
    expect(found[0]!.message).toContain('has no utm_source:');
  });

  it("tracking_param_mismatch: utm_campaign is not the delivery's (permId, name or its slug); without either, not judged", () => {
    const a = asset(`<a href="https://shop.example.com/a?${utm('spring-sale')}">a</a>`, `https://shop.example.com/t?${utm('autumn')}`);
    const found = trackingFindings([a], [], { tracking: TRACKING, name: 'Spring Sale' });
    expect(found).toEqual([expect.objectContaining({ code: 'tracking_param_mismatch', field: 'text', line: 1 })]);
    expect(found[0]!.message).toContain('utm_campaign=autumn, not this delivery\'s "Spring Sale" or "spring-sale" or "spring_sale"');
    expect(trackingFindings([a], [], { tracking: TRACKING, permId: 'autumn' })).toEqual([expect.objectContaining({ code: 'tracking_param_mismatch', field: 'html' })]);
    // no campaign to compare with: the values must still agree with each other
    expect(codes(trackingFindings([a], [], { tracking: TRACKING }))).toEqual(['tracking_inconsistent']);
  });

  it('tracking_inconsistent: a value that differs from the one most links have, across parts and languages', () => {
    const en = asset(`<a href="https://shop.example.com/a?${utm()}">a</a><a href="https://shop.example.com/b?${utm()}">b</a>`, undefined, 'en');
    const cs = asset(`<a href="https://shop.example.com/c?${utm('spring-sale', 'newsletter')}">c</a>`, undefined, 'cs');
    const found = trackingFindings([en, cs], [], { tracking: TRACKING, name: 'spring-sale' });
    expect(found).toEqual([expect.objectContaining({ code: 'tracking_inconsistent', language: 'cs' })]);
    expect(found[0]!.message).toContain('has utm_source=newsletter, where 2 links have utm_source=email');
  });

  it('judges links a template fills in as the samples rendered them, once per template link', () => {
    const a = asset(`<a href="https://shop.example.com/a?${utm()}">a</a>\n<a href="https://shop.example.com/c/{{ contact.contactId }}?{{ q }}">me</a>`);
    const rendered = (contactId: string, query: string) => ({
      assetRef: 'inline:en',
      language: 'en',
      contactId,
      html: `<a href="https://shop.example.com/a?${utm()}">a</a>\n<a href="https://shop.example.com/c/${contactId}?${query}">me</a>`,
    });
    const samples = [rendered('c1', 'utm_source=email'), rendered('c2', 'utm_source=email'), rendered('c3', utm())];
    const found = trackingFindings([a], samples, { tracking: TRACKING, name: 'spring-sale' });
    // the template's line 2; c1 and c2 gave the same parameters: one finding for both
    expect(found).toEqual([expect.objectContaining({ code: 'tracking_param_missing', line: 2, contactId: 'c1' })]);
    expect(found[0]!.message).toContain('(as rendered for contact c1 and 1 other sample)');
  });

  it('judges a URL of the text part that a template fills in as rendered, not as written', () => {
    const text = `Picks:\nhttps://shop.example.com/p?id={{ contact.contactId }}&${utm('{{ campaign }}')}`;
    const a = asset(`<a href="https://shop.example.com/a?${utm()}">a</a>`, text);
    // as written (no rendered text): not judged, so no "has no utm_source" about a URL cut at "{{"
    expect(trackingFindings([a], [], { tracking: TRACKING, name: 'spring-sale' })).toEqual([]);
    const sample = { assetRef: 'inline:en', language: 'en', contactId: 'c1', html: '', text: `Picks:\nhttps://shop.example.com/p?id=c1&${utm('autumn')}` };
    const found = trackingFindings([a], [sample], { tracking: TRACKING, name: 'spring-sale' });
    expect(found).toEqual([expect.objectContaining({ code: 'tracking_param_mismatch', field: 'text', line: 2, contactId: 'c1' })]);
  });

  it(`lists at most ${MAX_FINDINGS_PER_CODE} findings of a code, then one counting the rest`, () => {
    const links = Array.from({ length: MAX_FINDINGS_PER_CODE + 5 }, (_, i) => `<a href="https://shop.example.com/${i}">${i}</a>`).join('\n');
    const found = trackingFindings([asset(links)], [], { tracking: TRACKING });
    expect(found).toHaveLength(MAX_FINDINGS_PER_CODE + 1);
    expect(found.at(-1)).toEqual({ code: 'tracking_param_missing', message: 'and 5 more links like these', count: 5 });
  });
});

describe('the request', () => {
  const body = (options: Record<string, unknown>) => ({ audience: { lists: ['l'] }, assets: [{ html: '<p>x</p>' }], options });

  it('takes trackingDomains (lower-cased) with the default parameters, or the parameters it names', () => {
    expect(normalizeRequest(body({ trackingDomains: ['Shop.Example.com'] })).request?.tracking).toEqual({ domains: ['shop.example.com'], params: DEFAULT_TRACKING_PARAMS });
    expect(normalizeRequest(body({ trackingDomains: ['a.dev'], trackingParams: ['cid'] })).request?.tracking).toEqual({ domains: ['a.dev'], params: ['cid'] });
    expect(normalizeRequest(body({})).request?.tracking).toBeUndefined();
  });

  it('refuses a domain that is no host name, a parameter that is no name, and parameters without domains', () => {
    const problems = (options: Record<string, unknown>) => normalizeRequest(body(options)).problems.map((p) => p.message);
    expect(problems({ trackingDomains: ['https://shop.example.com'] })).toEqual(['options.trackingDomains: "https://shop.example.com" is not a domain name (such as shop.example.com)']);
    expect(problems({ trackingDomains: ['a.dev'], trackingParams: ['utm source'] })).toEqual(['options.trackingParams: "utm source" is not a query parameter name (letters, digits, _ . -)']);
    expect(problems({ trackingParams: ['cid'] })).toEqual(['options.trackingParams: needs options.trackingDomains: the domains whose links carry them']);
    expect(problems({ trackingDomains: [] })).toEqual(['options.trackingDomains: must be an array of 1 to 100 strings']);
  });
});

describe('convx validate', () => {
  const data = () =>
    dataset({
      'contacts.csv': csv(['contact_id', 'email', 'first_name', 'language', 'consent', 'unsubscribed', 'lists'], [
        ['c1', 'a@x.dev', 'Ann', 'en', true, false, 'l'],
        ['c2', 'b@x.dev', 'Bob', 'en', true, false, 'l'],
      ]),
    });
  const request = (dir: string, options: Record<string, unknown> = {}) => {
    const html = `<p>Hi</p>\n<a href="https://shop.example.com/a?${utm()}">a</a>\n<a href="https://shop.example.com/u/{{ contact.contactId }}?utm_source=email">me</a>\n<a href="https://shop.example.com/unsubscribe">Unsubscribe</a>`;
    writeFileSync(join(dir, 'r.json'), JSON.stringify({ name: 'Spring sale', audience: { lists: ['l'] }, assets: [{ language: 'en', subject: 'Hi', html }], options: { sampleSize: 2, ...options } }));
  };
  const tracking = (stdout: string) => (JSON.parse(stdout).render.warnings as Finding[]).filter((f) => f.code.startsWith('tracking_'));

  it('lints with --tracking-domains, the request option, or the profile; the flag wins; the samples carry no html', async () => {
    const dir = tempDir();
    const d = data();
    request(dir);
    const none = await cli(['validate', 'r.json', '--data', d, '-o', 'json'], { cwd: dir });
    expect(tracking(none.stdout)).toEqual([]);
    const flagged = await cli(['validate', 'r.json', '--data', d, '-o', 'json', '--tracking-domains', 'shop.example.com'], { cwd: dir });
    // the two samples rendered the link alike: one finding, at a sample's contact, counting the other
    expect(tracking(flagged.stdout).map((f) => [f.code, f.contactId])).toEqual([['tracking_param_missing', expect.stringMatching(/^c[12]$/)]]);
    expect(tracking(flagged.stdout)[0]!.message).toMatch(/\(as rendered for contact c[12] and 1 other sample\)/);
    expect(JSON.parse(flagged.stdout).render.samples.every((s: Record<string, unknown>) => !('html' in s))).toBe(true);
    // a parameter list of the flag: only utm_source is needed, which every link has
    const params = await cli(['validate', 'r.json', '--data', d, '-o', 'json', '--tracking-domains', 'shop.example.com', '--tracking-params', 'utm_source'], { cwd: dir });
    expect(tracking(params.stdout)).toEqual([]);
    request(dir, { trackingDomains: ['shop.example.com'] });
    const option = await cli(['validate', 'r.json', '--data', d, '-o', 'json'], { cwd: dir });
    expect(tracking(option.stdout).map((f) => f.code)).toEqual(['tracking_param_missing']);
    const elsewhere = await cli(['validate', 'r.json', '--data', d, '-o', 'json', '--tracking-domains', 'other.org'], { cwd: dir });
    expect(tracking(elsewhere.stdout)).toEqual([]);
  });

  it('refuses a bad list of a flag as a usage error naming the flag, not the request file', async () => {
    const dir = tempDir();
    request(dir);
    const bad = await cli(['validate', 'r.json', '--data', data(), '-o', 'json', '--tracking-domains', 'shop.example.com,https://shop.example.com'], { cwd: dir });
    expect([bad.code, bad.stdout]).toEqual([2, '']);
    expect(bad.stderr).toContain('--tracking-domains: "https://shop.example.com" is not a domain name (such as shop.example.com)');
    const params = await cli(['validate', 'r.json', '--data', data(), '--tracking-domains', 'shop.example.com', '--tracking-params', ' , '], { cwd: dir });
    expect([params.code, params.stderr]).toEqual([2, expect.stringContaining('--tracking-params: give 1 to 100 of them, comma-separated')]);
  });

  it('renders the text part for its URLs a template fills in, and keeps the rendered text out of the samples', async () => {
    const dir = tempDir();
    const text = `Hi\nhttps://shop.example.com/u/{{ contact.contactId }}?${utm('spring-sale', '{{ contact.firstName }}')}`;
    const html = `<a href="https://shop.example.com/a?${utm()}">a</a>`;
    writeFileSync(join(dir, 'r.json'), JSON.stringify({ name: 'Spring sale', audience: { lists: ['l'] }, assets: [{ language: 'en', subject: 'Hi', html, text }], options: { sampleSize: 2 } }));
    const r = await cli(['validate', 'r.json', '--data', data(), '-o', 'json', '--tracking-domains', 'shop.example.com'], { cwd: dir });
    const body = JSON.parse(r.stdout);
    // utm_source is the contact's first name: each sample's link differs from the HTML's utm_source=email
    const found = tracking(r.stdout);
    expect(found.map((f) => [f.code, f.field, f.contactId]).sort()).toEqual([
      ['tracking_inconsistent', 'text', 'c1'],
      ['tracking_inconsistent', 'text', 'c2'],
    ]);
    expect(found.map((f) => f.message).join('\n')).toContain('https://shop.example.com/u/c1?utm_source=Ann&utm_medium=email&utm_campaign=spring-sale (as rendered for contact c1) has utm_source=Ann');
    expect(body.render.samples.every((s: Record<string, unknown>) => !('text' in s) && !('html' in s))).toBe(true);
  });

  it("takes the profile's trackingDomains and trackingParams, refuses bad ones at config set, and makes a finding fatal with --fail-on", async () => {
    const dir = tempDir();
    const d = data();
    request(dir);
    const env = { XDG_CONFIG_HOME: tempDir() };
    expect((await cli(['config', 'set', 'trackingDomains', 'Shop.Example.com'], { env })).code).toBe(0);
    const bad = await cli(['config', 'set', 'trackingParams', 'utm source'], { env });
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('config set trackingParams: "utm source" is not a query parameter name')]);
    const fromProfile = await cli(['validate', 'r.json', '--data', d, '-o', 'json'], { cwd: dir, env });
    expect(fromProfile.code).toBe(0);
    expect(tracking(fromProfile.stdout).map((f) => f.code)).toEqual(['tracking_param_missing']);
    const fatal = await cli(['validate', 'r.json', '--data', d, '-o', 'json', '--fail-on', 'tracking_param_missing'], { cwd: dir, env });
    expect(fatal.code).toBe(1);
  });
});
