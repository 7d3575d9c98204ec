/**
 * Issue 20, point 4: `convx validate --baseline FILE` against an earlier `-o json` result: the
 * comparison alone (model/baseline.ts), then the command in process on a small dataset built here:
 * "same as baseline", audience drift, new and gone findings, changed samples with a short diff, the
 * flags that make a change fail, --update-baseline, and a bad baseline file as exit 2.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareWithBaseline, parseBaseline, parseDrift, QUOTED, shortDiff, splitQuoted } from '../src/model/baseline.js';
import type { ValidateResponse } from '../src/model/validation.js';
import { csv, dataset, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const CONTACT_HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
const person = (i: number, list = 'l') => [`c${i}`, `p${i}@x.dev`, `Name${i}`, 'cs', 'CZ', true, false, list];
/** n deliverable contacts on list l. */
const contacts = (n: number) => dataset({ 'contacts.csv': csv(CONTACT_HEADER, Array.from({ length: n }, (_, i) => person(i + 1))) });

const UNSUBSCRIBE = '<a href="https://x.dev/unsubscribe">Unsubscribe</a>';
const request = (subject = 'Hello {{ contact.firstName }}', html = `<html><body><p>Hi</p>${UNSUBSCRIBE}</body></html>`) =>
  JSON.stringify({ audience: { lists: ['l'] }, assets: [{ language: 'cs', subject, html, text: 'Hi' }] });

/** A folder with the request file; the dataset of n contacts. */
function setup(n = 10, body = request()) {
  const dir = tempDir('convx-baseline-');
  writeFileSync(join(dir, 'request.json'), body);
  return { dir, data: contacts(n), base: join(dir, 'base.json') };
}

/** The commands are lent one backend of each dataset (kept-backends.ts): a test changes the request and the baseline, never the data. */
const kept = keptBackends();
const run = (s: { dir: string; data: string }, ...more: string[]) => kept(['validate', 'request.json', '--data', s.data, ...more], { cwd: s.dir });

describe('the comparison alone', () => {
  const response = (deliverable: number, warnings: ValidateResponse['render']['warnings'] = [], subject = 'Hi Ann'): ValidateResponse => ({
    channel: 'email',
    audience: { intended: deliverable, suppressed: 0, deliverable, suppressionBreakdown: { unsubscribed: 0, invalidEmail: 0, noConsent: 0 } },
    languages: [],
    render: { samples: [{ language: 'cs', contactId: 'c1', subject, htmlExcerpt: '<p>x</p>' }], warnings, errors: [] },
  });

  it('finds nothing in the same result, and a finding whose numbers moved is the same finding', () => {
    const w = (n: number) => [{ code: 'unresolved_variable', message: `{{ x }} is empty for ${n} recipients`, assetRef: 'inline:0' }];
    expect(compareWithBaseline(response(100, w(3)), response(100, w(7)), 'b.json')).toEqual({ file: 'b.json', same: true, changes: [] });
  });

  it("keeps the ids and URLs of a message: only its counts, lines and percentages may differ", () => {
    const w = (message: string) => [{ code: 'unknown_contact', message, field: 'audience.contactIds' }];
    const ids = [
      ['audience.contactIds: no contact c-9001 in the dataset', 'audience.contactIds: no contact c-7777 in the dataset'],
      ['audience.contactIds: no contact 9001 in the dataset', 'audience.contactIds: no contact 7777 in the dataset'],
      ['audience.lists: no contact is on list l-99, so it selects nobody; did you mean l-1?', 'audience.lists: no contact is on list l-98, so it selects nobody; did you mean l-1?'],
      ['1 image without alt text: https://x.dev/banner1.png', '1 image without alt text: https://x.dev/banner2.png'],
      ['html line 3: https://x.dev/?utm_campaign=2024 has no utm_source', 'html line 3: https://x.dev/?utm_campaign=2025 has no utm_source'],
    ];
    for (const [before, after] of ids) {
      const changes = compareWithBaseline(response(100, w(before!)), response(100, w(after!)), 'b.json').changes;
      expect(changes.map((c) => [c.kind, c.message]), after).toEqual([
        ['new_finding', `new warning unknown_contact: ${after}`],
        ['gone_finding', `gone warning unknown_contact: ${before}`],
      ]);
    }
    const numbers = [
      ['audience.lists: 12 more values no contact has (22 in all)', 'audience.lists: 3 more values no contact has (13 in all)'],
      ['html line 3: tag {% if x %} not closed', 'html line 14: tag {% if x %} not closed'],
      ['1,234 recipients in language cs get inline:0', '987 recipients in language cs get inline:0'],
    ];
    for (const [before, after] of numbers) expect(compareWithBaseline(response(100, w(before!)), response(100, w(after!)), 'b.json').same, after).toBe(true);
    // --strict-baseline: any change at all, a count that moved too
    const strict = compareWithBaseline(response(100, w(numbers[0]![0]!)), response(100, w(numbers[0]![1]!)), 'b.json', { strict: true });
    expect(strict.changes.map((c) => [c.kind, c.fails])).toEqual([['new_finding', true], ['gone_finding', true]]);
  });

  it('a count going from 1 to 2 (or back) is the same finding: the words that agree with it, nouns and verbs, do not count', () => {
    const w = (code: string, message: string) => [{ code, message, assetRef: 'inline:0', field: 'html' }];
    const pairs = [
      ['empty_link', '1 link with an empty or "#" href', '2 links with an empty or "#" href'],
      ['insecure_link', '1 link over plain http: http://x.dev/a', '2 links over plain http: http://x.dev/a'],
      ['language_fallback', '1 recipient in language de gets inline:0, which has no language', '3 recipients in language de get inline:0, which has no language'],
      ['duplicate_email', '1 contact shares an e-mail address with another in the audience and will not get a second copy', '2 contacts share an e-mail address with another in the audience and will not get a second copy'],
      ['unresolved_variable', '{{ x }} in html is empty for 1 deliverable recipient (contact field without a value; add one, or a default filter)', '{{ x }} in html is empty for 2 deliverable recipients (contact field without a value; add one, or a default filter)'],
      ['layout_table_role', '1 layout table without role="presentation" (no <th> or <caption>), which screen readers announce as data; first on line 3', '2 layout tables without role="presentation" (no <th> or <caption>), which screen readers announce as data; first on line 9'],
      ['tracking_inconsistent', 'html line 3: https://x.dev/?utm_source=a has utm_source=a, where 1 link has utm_source=b', 'html line 4: https://x.dev/?utm_source=a has utm_source=a, where 2 links have utm_source=b'],
      ['tracking_param_missing', 'html line 3: https://x.dev/a (as rendered for contact c1) has no utm_source: attribution needs utm_source on links to x.dev', 'html line 3: https://x.dev/a (as rendered for contact c1 and 1 other sample) has no utm_source: attribution needs utm_source on links to x.dev'],
      ['tracking_param_missing', 'html line 3: https://x.dev/a (as rendered for contact c1 and 1 other sample) has no utm_source: x', 'html line 3: https://x.dev/a (as rendered for contact c1 and 2 other samples) has no utm_source: x'],
      ['client_unsupported', 'Flexbox (flexbox), first on line 3: not supported by Outlook', 'Flexbox (flexbox), first on line 3, 2 uses: not supported by Outlook'],
      ['empty_link', '1 link is empty', '2 links are empty'],
    ];
    for (const [code, one, two] of pairs) {
      expect(compareWithBaseline(response(100, w(code!, one!)), response(100, w(code!, two!)), 'b.json').same, two).toBe(true);
      expect(compareWithBaseline(response(100, w(code!, two!)), response(100, w(code!, one!)), 'b.json').same, one).toBe(true);
      // --strict-baseline: the message exactly
      expect(compareWithBaseline(response(100, w(code!, one!)), response(100, w(code!, two!)), 'b.json', { strict: true }).same, two).toBe(false);
    }
    // words that do not follow a count keep their number: another finding
    expect(compareWithBaseline(response(100, w('x', 'html line 3: https://x.dev/shoes has no utm_source')), response(100, w('x', 'html line 3: https://x.dev/shoe has no utm_source')), 'b.json').same).toBe(false);
  });

  it("quoted user text keeps its digits (a subject, a link's text, a decoded tracking value); convx's counts around it still move", () => {
    const w = (code: string, message: string) => [{ code, message, assetRef: 'inline:0', field: 'html' }];
    const other = [
      ['subject_all_caps', 'the subject is all in capitals ("SALE 50 % OFF"), which reads as shouting and spam filters score', 'the subject is all in capitals ("SALE 70 % OFF"), which reads as shouting and spam filters score'],
      ['subject_all_caps', 'the subject is all in capitals ("SALE "50" OFF"), which reads as shouting', 'the subject is all in capitals ("SALE "70" OFF"), which reads as shouting'],
      ['tracking_param_mismatch', 'html line 3: https://x.dev/?utm_campaign=summer%202024 has utm_campaign=summer 2024, not this delivery\'s "spring"', 'html line 3: https://x.dev/?utm_campaign=summer%202024 has utm_campaign=summer 2025, not this delivery\'s "spring"'],
      ['tracking_param_mismatch', 'html line 3: https://x.dev/?c=a has utm_campaign=a, not this delivery\'s "summer 2024"', 'html line 3: https://x.dev/?c=a has utm_campaign=a, not this delivery\'s "summer 2025"'],
      ['tracking_inconsistent', 'html line 3: https://x.dev/?c=a has utm_content=a, where 2 links have utm_content=top 10', 'html line 3: https://x.dev/?c=a has utm_content=a, where 2 links have utm_content=top 20'],
      ['link_domain_mismatch', '1 link whose text names another domain than the one they go to: "shop 2024.com" goes to https://x.dev (line 3)', '1 link whose text names another domain than the one they go to: "shop 2025.com" goes to https://x.dev (line 3)'],
      ['x', 'the text says «Sale 50 %»', 'the text says «Sale 70 %»'],
    ];
    for (const [code, before, after] of other) {
      const changes = compareWithBaseline(response(100, w(code!, before!)), response(100, w(code!, after!)), 'b.json').changes;
      expect(changes.map((c) => [c.kind, c.message]), after).toEqual([
        ['new_finding', `new warning ${code}: ${after}`],
        ['gone_finding', `gone warning ${code}: ${before}`],
      ]);
    }
    const same = [
      ['tracking_param_mismatch', 'html line 3: https://x.dev/?c=summer%202024 has utm_campaign=summer 2024, not this delivery\'s "spring"', 'html line 12: https://x.dev/?c=summer%202024 has utm_campaign=summer 2024, not this delivery\'s "spring"'],
      ['tracking_inconsistent', 'html line 3: https://x.dev/?c=a has utm_content=a, where 2 links have utm_content=top 10', 'html line 3: https://x.dev/?c=a has utm_content=a, where 5 links have utm_content=top 10'],
      ['link_domain_mismatch', '2 links whose text names another domain than the one they go to: "shop 2024.com" goes to https://x.dev (line 3)', '3 links whose text names another domain than the one they go to: "shop 2024.com" goes to https://x.dev (line 8)'],
    ];
    for (const [code, before, after] of same) expect(compareWithBaseline(response(100, w(code!, before!)), response(100, w(code!, after!)), 'b.json').same, after).toBe(true);
  });

  it("an inline asset's place in the request is not part of a finding: reordered or moved by one inserted in front, the same", () => {
    const at = (i: number, code = 'missing_text_part') => ({ code, message: `inline:${i} has no plain-text part`, assetRef: `inline:${i}`, language: 'cs', field: 'text' });
    const before = response(100, [at(0), at(1, 'missing_preheader')]);
    expect(compareWithBaseline(before, response(100, [at(1), at(0, 'missing_preheader')]), 'b.json').same).toBe(true);
    expect(compareWithBaseline(before, response(100, [at(2), at(1, 'missing_preheader')]), 'b.json', { strict: true }).same).toBe(true);
    // a multiset: two assets with the same finding are two findings
    const twice = compareWithBaseline(response(100, [at(0)]), response(100, [at(1), at(0)]), 'b.json');
    expect(twice.changes.map((c) => [c.kind, c.finding?.code])).toEqual([['new_finding', 'missing_text_part']]);
  });

  it('counts a finding twice when it is there twice, and fails on new ones always', () => {
    const f = { code: 'empty_link', message: 'an empty link', assetRef: 'inline:0' };
    const c = compareWithBaseline(response(100, [f]), response(100, [f, f]), 'b.json');
    expect(c.changes).toEqual([{ kind: 'new_finding', message: 'new warning empty_link: an empty link', fails: true, finding: { ...f, severity: 'warning' } }]);
  });

  it('drift fails over --max-audience-drift only, and everything under strict', () => {
    expect(compareWithBaseline(response(100), response(111), 'b', { maxAudienceDrift: 0.1 }).changes[0]).toMatchObject({
      message: 'deliverable audience 100 -> 111 (+11.0 %, over --max-audience-drift 10%)',
      fails: true,
    });
    expect(compareWithBaseline(response(100), response(91), 'b', { maxAudienceDrift: 0.1 }).changes[0]!.fails).toBe(false);
    expect(compareWithBaseline(response(100), response(91), 'b').changes[0]!.fails).toBe(false);
    expect(compareWithBaseline(response(0), response(5), 'b', { maxAudienceDrift: 5 }).changes[0]!.fails).toBe(true);
    const strict = compareWithBaseline(response(100, [], 'Hi Ann'), response(101, [], 'Hi Bob'), 'b', { strict: true });
    expect(strict.changes.map((c) => [c.kind, c.fails])).toEqual([
      ['audience', true],
      ['sample', true],
    ]);
  });

  it('a short diff shows the part that changed with a little context', () => {
    expect(shortDiff('Hello Ann, welcome', 'Hello Bob, welcome')).toEqual(['- Hello Ann, welcome', '+ Hello Bob, welcome']);
    const long = 'x'.repeat(100);
    expect(shortDiff(`${long}A${long}`, `${long}B${long}`)).toEqual([`- …${'x'.repeat(20)}A${'x'.repeat(20)}…`, `+ …${'x'.repeat(20)}B${'x'.repeat(20)}…`]);
  });

  it('reads percentages', () => {
    expect([parseDrift('10%'), parseDrift('2.5 %'), parseDrift('0'), parseDrift('ten'), parseDrift('-5%')]).toEqual([0.1, 0.025, 0, undefined, undefined]);
  });

  it('a baseline that is not a result says what is wrong', () => {
    expect(() => parseBaseline('{"audience":{"intended":1,"suppressed":0,"deliverable":"1"}}', 'b.json')).toThrow(
      '--baseline b.json is not a validation result: audience.deliverable must be a whole number',
    );
    const ok = JSON.stringify(response(1));
    expect(() => parseBaseline(ok.replace('"subject":"Hi Ann"', '"subject":3'), 'b.json')).toThrow('render.samples[0].subject must be a string');
    expect(() => parseBaseline('[]', 'b.json')).toThrow('must hold a JSON object');
  });

  it("checks the whole shape the comparison reads against the response's JSON Schema, naming the path of the bad value", () => {
    const good = JSON.parse(JSON.stringify(response(5, [{ code: 'empty_link', message: 'an empty link', count: 1 }]))) as ValidateResponse;
    good.render.samples[0]!.textExcerpt = 'Hi';
    good.render.samples[0]!.digest = 'abc';
    good.render.information = [{ code: 'missing_preheader', message: 'no preheader' }];
    expect(parseBaseline(JSON.stringify(good), 'b.json')).toEqual(good);
    const bad: [(b: ValidateResponse) => void, string][] = [
      [(b) => (b.render.samples[0]!.textExcerpt = 3 as never), 'render.samples[0].textExcerpt must be a string'],
      [(b) => (b.render.samples[0]!.textExcerpt = null as never), 'render.samples[0].textExcerpt must be a string'],
      [(b) => (b.render.samples[0]!.htmlExcerpt = null as never), 'render.samples[0].htmlExcerpt must be a string'],
      [(b) => (b.render.samples[0]!.subject = 7 as never), 'render.samples[0].subject must be a string'],
      [(b) => (b.render.samples[0]!.digest = [] as never), 'render.samples[0].digest must be a string'],
      [(b) => (b.render.samples[0] = 'x' as never), 'render.samples[0] must be an object'],
      [(b) => (b.render.warnings[0]!.assetRef = 0 as never), 'render.warnings[0].assetRef must be a string'],
      [(b) => (b.render.warnings[0]!.count = '1' as never), 'render.warnings[0].count must be a whole number'],
      [(b) => (b.render.information = [{ code: 'x', message: null as never }]), 'render.information[0].message must be a string'],
      [(b) => (b.render.information = {} as never), 'render.information must be an array'],
      [(b) => (b.audience.deliverable = -1), 'audience.deliverable must be a whole number from 0'],
      [(b) => delete (b as Partial<ValidateResponse>).render, 'render must be an object'],
    ];
    for (const [edit, problem] of bad) {
      const b = JSON.parse(JSON.stringify(good)) as ValidateResponse;
      edit(b);
      expect(() => parseBaseline(JSON.stringify(b), 'b.json'), problem).toThrow(`--baseline b.json is not a validation result: ${problem}`);
    }
  });
});

describe('the quoted text a finding key keeps', () => {
  it('is split off as the pattern QUOTED splits it, in time linear in the length (100,000 unclosed "«" took 13.8 s)', () => {
    let seed = 3;
    const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const alphabet = ['"', '"', '\\', '«', '»', '“', '”', '=', '&', ',', ' ', '(', ')', 'a', '1', '\n', '.', '!', ']', '𝐀', '\ud800', ';', '\u00a0'];
    for (let i = 0; i < 4_000; i++) {
      const text = Array.from({ length: Math.floor(random() * 24) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
      expect(splitQuoted(text), JSON.stringify(text)).toEqual(text.split(QUOTED));
    }
    const began = performance.now();
    for (const hostile of ['«'.repeat(100_000), 'a "'.repeat(100_000), '“'.repeat(100_000), ' "\\'.repeat(50_000)]) expect(splitQuoted(hostile).join('')).toBe(hostile);
    expect(performance.now() - began).toBeLessThan(2000);
  });
});

describe('convx validate --baseline', () => {
  it('--update-baseline writes the -o json result (atomically), and the next run is the same as the baseline', async () => {
    const s = setup();
    const wrote = await run(s, '--baseline', 'base.json', '--update-baseline', '-o', 'table');
    expect(wrote.code).toBe(0);
    expect(wrote.stderr).toContain('wrote the baseline base.json');
    const json = await run(s, '-o', 'json');
    expect(readFileSync(s.base, 'utf8')).toBe(json.stdout);
    expect(readdirSync(s.dir).sort()).toEqual(['base.json', 'request.json']); // no temporary file left
    const again = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Baseline base.json: same as baseline\n');
    const asJson = JSON.parse((await run(s, '--baseline', 'base.json', '-o', 'json')).stdout) as { baseline: unknown };
    expect(asJson.baseline).toEqual({ file: 'base.json', same: true, changes: [] });
    expect((await run(s, '--baseline', 'base.json', '-o', 'github')).stdout).toContain('::notice title=convx baseline::same as baseline base.json\n');
     // the page asks for each sample's whole HTML; the baseline it writes is still the JSON of -o json
    const page = await run(s, '--baseline', 'html-base.json', '--update-baseline', '-o', 'html');
    expect([page.code, page.stderr]).toEqual([0, 'wrote the baseline html-base.json\n']);
    expect(readFileSync(join(s.dir, 'html-base.json'), 'utf8')).toBe(json.stdout);
  });

  it('a new finding fails the run in every format; --update-baseline accepts it', async () => {
    const s = setup();
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), request('Hello', '<html><body><p>Hi, our spring sale starts today.</p><img src="https://x.dev/a.png"></body></html>'));
    const table = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect(table.code).toBe(1);
    expect(table.stdout).toContain('✗ new warning missing_unsubscribe_link: inline:0 has no unsubscribe link');
    expect(table.stdout).toContain('✗ new warning image_missing_alt');
    expect(table.stdout).toMatch(/NOT READY: 2 new findings since the baseline base\.json\n$/);
    expect(table.stderr).toBe('convx: not ready: 2 new findings since the baseline base.json\n');
    const github = await run(s, '--baseline', 'base.json', '-o', 'github');
    expect(github.code).toBe(1);
    expect(github.stdout).toContain('::error title=convx baseline::new warning missing_unsubscribe_link');
    const junit = await run(s, '--baseline', 'base.json', '-o', 'junit');
    expect(junit.stdout).toContain('<testcase classname="convx.validate.baseline" name="baseline">\n      <failure type="baseline" message="2 new findings since the baseline base.json">');
    expect(junit.stdout).toMatch(/<testsuites name="convx validate" tests="(\d+)" failures="1">/);
    const accepted = await run(s, '--baseline', 'base.json', '--update-baseline', '-o', 'table');
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain('· new warning missing_unsubscribe_link');
    expect((await run(s, '--baseline', 'base.json', '-o', 'table')).stdout).toContain('same as baseline');
  });

  it('one more empty link (1 -> 2, "link" -> "links") is the same finding; a subject quoting other digits is a new one', async () => {
    const links = (n: number) => `<html><body><p>Hi</p>${'<a href="#">x</a>'.repeat(n)}${UNSUBSCRIBE}</body></html>`;
    const s = setup(3, request('Hello', links(1)));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), request('Hello', links(2)));
    const more = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect([more.code, more.stderr]).toEqual([0, '']);
    expect(more.stdout).toMatch(/Baseline base\.json: 1 change\n  · sample cs \(contact c\d\): HTML changed\n/); // the finding neither new nor gone
    expect(more.stdout).not.toContain('empty_link: 1 link');
    writeFileSync(join(s.dir, 'request.json'), request('SALE 50 % OFF', links(1)));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), request('SALE 70 % OFF', links(1)));
    const other = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect(other.code).toBe(1);
    expect(other.stdout).toContain('✗ new warning subject_all_caps: the subject is all in capitals ("SALE 70 % OFF")');
  });

  it('gone findings and changed samples are listed (a short diff) and pass; --strict-baseline fails on them', async () => {
    const s = setup(10, request('Hello {{ contact.firstName }}', '<html><body><p>Hi</p><a href="#">x</a></body></html>'));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), request('Welcome {{ contact.firstName }}'));
    const listed = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/· gone warning missing_unsubscribe_link/);
    expect(listed.stdout).toMatch(/· gone warning empty_link/);
    expect(listed.stdout).toMatch(/· sample cs \(contact c\d+\): subject and HTML changed\n\s+- Hello Name\d+\n\s+\+ Welcome Name\d+\n/);
    const strict = await run(s, '--baseline', 'base.json', '--strict-baseline', '-o', 'json');
    expect(strict.code).toBe(1);
    expect(strict.stderr).toBe('convx: not ready: 2 findings gone, 1 changed sample since the baseline base.json\n');
  });

  it("sees a change of the text part (a short diff) and one past the HTML's excerpt (the whole sample's digest)", async () => {
    const long = (offer: string) => `<html><body><p>${'Our spring collection is here. '.repeat(20)}</p><p>Sleva ${offer} %.</p>${UNSUBSCRIBE}</body></html>`;
    const body = (offer: string, text: string) => JSON.stringify({ audience: { lists: ['l'] }, assets: [{ language: 'cs', subject: 'Hello', html: long(offer), text }] });
    const s = setup(3, body('10', 'Sleva 10 %'));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), body('10', 'Sleva 20 %'));
    const text = await run(s, '--baseline', 'base.json', '--strict-baseline', '-o', 'table');
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/✗ sample cs \(contact c\d+\): text changed\n\s+- Sleva 10 %\n\s+\+ Sleva 20 %\n/);
    writeFileSync(join(s.dir, 'request.json'), body('90', 'Sleva 10 %'));
    const past = await run(s, '--baseline', 'base.json', '--strict-baseline', '-o', 'table');
    expect(past.code).toBe(1);
    expect(past.stdout).toMatch(/✗ sample cs \(contact c\d+\): the HTML or text changed past the excerpts/);
  });

  it('inline assets swapped, or one inserted in front, are the same as the baseline; a real new finding is still new', async () => {
    const cs = { language: 'cs', subject: 'Ahoj', html: '<html><body><p>Ahoj</p><a href="http://x.dev/a">a</a></body></html>', text: 'Ahoj' };
    const en = { language: 'en', subject: 'Hi', html: `<html><body><p>Hi</p><img src="https://x.dev/a.png">${UNSUBSCRIBE}</body></html>` };
    const clean = {
      language: 'de',
      subject: 'Hallo',
      preheader: 'Hallo',
      html: `<html lang="de"><head><meta name="color-scheme" content="light dark"></head><body><p>Hallo</p>${UNSUBSCRIBE}</body></html>`,
      text: 'Hallo',
    };
    const body = (assets: object[]) => JSON.stringify({ audience: { lists: ['l'] }, assets });
    const s = setup(5, body([cs, en]));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    const findings = JSON.parse(readFileSync(s.base, 'utf8')) as ValidateResponse;
    expect(new Set([...findings.render.errors, ...findings.render.warnings].map((f) => f.assetRef))).toEqual(new Set(['inline:0', 'inline:1']));
    for (const assets of [[en, cs], [clean, cs, en], [en, clean, cs]]) {
      writeFileSync(join(s.dir, 'request.json'), body(assets));
      const same = await run(s, '--baseline', 'base.json', '--strict-baseline', '-o', 'table');
      expect(same.stdout, JSON.stringify(assets.map((a) => a.language))).toContain('Baseline base.json: same as baseline\n');
      expect(same.code).toBe(0);
    }
    writeFileSync(join(s.dir, 'request.json'), body([clean, { ...en, html: en.html.replace('<p>Hi</p>', '<p>Hi</p><a href="http://x.dev/b">b</a>') }, cs]));
    const fresh = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect(fresh.code).toBe(1);
    expect(fresh.stdout).toContain('✗ new warning insecure_link: 1 link over plain http: http://x.dev/b');
    expect(fresh.stderr).toBe('convx: not ready: 1 new finding since the baseline base.json\n');
  });

  it('a finding naming another id is a new finding, --strict-baseline or not (ids keep their digits)', async () => {
    const body = (id: string) => JSON.stringify({ audience: { contactIds: ['c3', 'c4', id] }, assets: [JSON.parse(request()).assets[0]] });
    const s = setup(5, body('c9001'));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), body('c7777'));
    for (const strict of [[], ['--strict-baseline']]) {
      const other = await run(s, '--baseline', 'base.json', ...strict, '-o', 'table');
      expect(other.code).toBe(1);
      expect(other.stdout).toContain('✗ new warning unknown_contact: audience.contactIds: no contact c7777 in the dataset');
      expect(other.stdout).toMatch(/[·✗] gone warning unknown_contact: audience.contactIds: no contact c9001 in the dataset/);
    }
  });

  it('an information finding that came is new in every format (SARIF too), one that went is gone; neither fails, --strict-baseline or not', async () => {
    const withPreheader = (preheader: boolean) => {
      const asset = JSON.parse(request()).assets[0];
      return JSON.stringify({ audience: { lists: ['l'] }, assets: [preheader ? { ...asset, preheader: 'Hi' } : asset] });
    };
    const s = setup(5, withPreheader(true));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), withPreheader(false));
    const message = "new information missing_preheader: inline:0 has no preheader; the inbox shows the body's first text instead";
    const table = await run(s, '--baseline', 'base.json', '-o', 'table');
    expect([table.code, table.stderr]).toEqual([0, '']);
    expect(table.stdout).toContain(`Baseline base.json: 1 change\n  · ${message}\n`);
    const json = JSON.parse((await run(s, '--baseline', 'base.json', '-o', 'json')).stdout) as { baseline: { same: boolean; changes: { kind: string; message: string; fails: boolean }[] } };
    expect(json.baseline.same).toBe(false);
    expect(json.baseline.changes).toMatchObject([{ kind: 'new_finding', message, fails: false }]);
    expect((await run(s, '--baseline', 'base.json', '-o', 'github')).stdout).toContain(`::notice title=convx baseline::${message}\n`);
    const sarif = await run(s, '--baseline', 'base.json', '-o', 'sarif');
    const results = (JSON.parse(sarif.stdout) as { runs: { results: { ruleId: string; level: string; baselineState: string }[] }[] }).runs[0]!.results;
    expect(results.filter((r) => r.ruleId === 'missing_preheader')).toMatchObject([{ level: 'note', baselineState: 'new' }]);
    expect(results.filter((r) => r.ruleId !== 'missing_preheader').every((r) => r.baselineState === 'unchanged')).toBe(true);
    expect(sarif.code).toBe(0);
    expect((await run(s, '--baseline', 'base.json', '--strict-baseline')).code).toBe(0);
    // and back: the information finding is gone, listed, not failing
    await run(s, '--baseline', 'base.json', '--update-baseline');
    writeFileSync(join(s.dir, 'request.json'), withPreheader(true));
    const gone = await run(s, '--baseline', 'base.json', '--strict-baseline', '-o', 'table');
    expect([gone.code, gone.stderr]).toEqual([0, '']);
    expect(gone.stdout).toContain('  · gone information missing_preheader: inline:0 has no preheader');
  });

  it('--ignore CODE leaves that code out of the baseline too (not gone, --strict-baseline or not); --fail-on CODE makes it an error on both sides (not new)', async () => {
    const s = setup(3, request('Hello', `<html><body><p>Hi</p><a href="#">x</a>${UNSUBSCRIBE}</body></html>`));
    await run(s, '--baseline', 'base.json', '--update-baseline');
    expect(readFileSync(s.base, 'utf8')).toContain('"code": "empty_link"');
    for (const strict of [[], ['--strict-baseline']]) {
      const ignored = await run(s, '--baseline', 'base.json', '--ignore', 'empty_link', ...strict, '-o', 'table');
      expect([ignored.code, ignored.stderr], strict.join()).toEqual([0, '']);
      expect(ignored.stdout).toContain('Baseline base.json: same as baseline\n');
    }
    const fatal = await run(s, '--baseline', 'base.json', '--fail-on', 'empty_link', '--strict-baseline', '-o', 'table');
    expect(fatal.stdout).toContain('Baseline base.json: same as baseline\n');
    expect(fatal.stderr).toBe('convx: not ready: 1 error (empty_link)\n'); // the code made fatal fails the run, not the baseline
  });

  it('audience drift: listed, and a failure over --max-audience-drift', async () => {
    const s = setup(10);
    await run(s, '--baseline', 'base.json', '--update-baseline');
    const more = { ...s, data: contacts(12) };
    const listed = await run(more, '--baseline', 'base.json', '-o', 'table');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('· deliverable audience 10 -> 12 (+20.0 %)');
    expect((await run(more, '--baseline', 'base.json', '--max-audience-drift', '25%')).code).toBe(0);
    const over = await run(more, '--baseline', 'base.json', '--max-audience-drift', '10%', '-o', 'github');
    expect(over.code).toBe(1);
    expect(over.stdout).toContain('::error title=convx baseline::deliverable audience 10 -> 12 (+20.0 %25, over --max-audience-drift 10%25)');
    expect(over.stderr).toBe('convx: not ready: 1 audience drift since the baseline base.json\n');
  });

  it('a baseline that is not JSON is told by line and column, never quoting the file', async () => {
    const s = setup();
    writeFileSync(s.base, '{"audience": {\n  "intended": 1, "secret": "hunter2-PII" x}}');
    const broken = await run(s, '--baseline', 'base.json');
    expect(broken.code).toBe(2);
    expect(broken.stderr.split('\n')[0]).toBe('convx: error: --baseline base.json is not JSON (at line 2, column 42)');
    expect(broken.stderr).not.toContain('hunter2');
    // the model alone: where, from the scanner the command passes
    expect(() => parseBaseline('{"a": x', 'b.json', (text) => ({ line: 1, column: text.indexOf('x') + 1 }))).toThrow('--baseline b.json is not JSON (at line 1, column 7)');
  });

  it("a UTF-8 BOM in front of a baseline (an editor's) is read past", async () => {
    const s = setup();
    await run(s, '--baseline', 'bom.json', '--update-baseline', '-o', 'table');
    writeFileSync(join(s.dir, 'bom.json'), `\uFEFF${readFileSync(join(s.dir, 'bom.json'), 'utf8')}`);
    const bom = await run(s, '--baseline', 'bom.json', '-o', 'table');
    expect([bom.code, bom.stderr]).toEqual([0, '']);
    expect(bom.stdout).toContain('Baseline bom.json: same as baseline\n');
    // and where a BOM'd file is not JSON, the column is the text's own
    expect(() => parseBaseline('\uFEFF{"a": x', 'b.json', (text) => ({ line: 1, column: text.indexOf('x') + 1 }))).toThrow('--baseline b.json is not JSON (at line 1, column 7)');
  });

  it('--update-baseline replaces a baseline it cannot read (not JSON, an old or broken shape), with a warning; without it, exit 2', async () => {
    const s = setup();
    const json = (await run(s, '-o', 'json')).stdout;
    const bad = [
      ['{"audience": ', '--baseline base.json is not JSON (at line 1, column 14)'],
      ['{"audience":{"intended":1,"suppressed":0,"deliverable":1},"render":{"samples":[],"warnings":[{"code":"x","message":"m","line":null}],"errors":[]}}', '--baseline base.json is not a validation result: render.warnings[0].line must be a whole number'],
    ];
    for (const [text, why] of bad) {
      writeFileSync(s.base, text!);
      expect((await run(s, '--baseline', 'base.json')).code, why).toBe(2);
      expect(readFileSync(s.base, 'utf8')).toBe(text);
      const update = await run(s, '--baseline', 'base.json', '--update-baseline', '-o', 'table');
      expect([update.code, update.stderr], why).toEqual([0, `warning: ${why}; --update-baseline replaces it\nwrote the baseline base.json\n`]);
      expect(readFileSync(s.base, 'utf8')).toBe(json);
      expect((await run(s, '--baseline', 'base.json', '-o', 'table')).stdout).toContain('Baseline base.json: same as baseline\n');
    }
  });

  it('a bad baseline or flag is exit 2 naming the file and what is wrong, before any work', async () => {
    const s = setup();
    const missing = await run(s, '--baseline', 'nope.json');
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--baseline: not found: nope.json')]);
    writeFileSync(s.base, '{"audience": ');
    const broken = await run(s, '--baseline', 'base.json');
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('--baseline base.json is not JSON (at line 1, column 14)');
    writeFileSync(s.base, '{"audience": {"intended": 1, "suppressed": 0, "deliverable": 1}, "render": {"samples": [], "warnings": [{}], "errors": []}}');
    expect((await run(s, '--baseline', 'base.json')).stderr).toContain('--baseline base.json is not a validation result: render.warnings[0].code must be a string');
    expect(readFileSync(s.base, 'utf8')).toContain('"warnings": [{}]'); // left as it was
    // a hand-edited sample's excerpt: not a crash ("text.slice is not a function"), exit 2 naming where
    await run(s, '--baseline', 'good.json', '--update-baseline');
    const edited = JSON.parse(readFileSync(join(s.dir, 'good.json'), 'utf8')) as ValidateResponse;
    edited.render.samples[0]!.textExcerpt = 42 as never;
    writeFileSync(s.base, JSON.stringify(edited));
    const excerpt = await run(s, '--baseline', 'base.json');
    expect([excerpt.code, excerpt.stderr.split('\n')[0]]).toEqual([2, 'convx: error: --baseline base.json is not a validation result: render.samples[0].textExcerpt must be a string']);
    const drift = await run(s, '--baseline', 'base.json', '--max-audience-drift', 'lots');
    expect([drift.code, drift.stderr]).toEqual([2, expect.stringContaining('--max-audience-drift: "lots" is not a percentage (e.g. 10%)')]);
    const alone = await run(s, '--update-baseline');
    expect([alone.code, alone.stderr]).toEqual([2, expect.stringContaining('--update-baseline applies to --baseline FILE only')]);
    expect(existsSync(join(s.dir, 'nope.json'))).toBe(false);
  });
});
