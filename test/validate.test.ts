/** Delivery validation (the README's `convx validate`): each rule and finding on a small dataset built here, the CLI formats, the server and API mode. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalBackend } from '../src/local/open.js';
import { CHECKS, type Finding, type ValidateResponse } from '../src/model/validation.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer } from '../src/server/start.js';
import { cli, csv, dataset, SAMPLES, suiteThreadsOption } from './helpers.js';
import { keptBackends, keptValidations } from './kept-backends.js';

const CONTACT_HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
type ContactRow = [string, string | null, string | null, string | null, string, boolean | null, boolean, string];

function contacts(rows: ContactRow[], extra: Record<string, string> = {}): string {
  return dataset({ 'contacts.csv': csv(CONTACT_HEADER, rows), ...extra });
}

/** A dataset's validations, answered by one backend of it (kept-backends.ts). */
const validate: (dir: string, body: unknown) => Promise<ValidateResponse> = keptValidations();

const HTML = '<html><body><p>Hi</p><a href="https://x.dev/unsubscribe">Unsubscribe</a></body></html>';
const asset = (extra: Record<string, unknown> = {}) => ({ subject: 'Hello', html: HTML, text: 'Hi', ...extra });
const codes = (findings: Finding[]) => findings.map((f) => f.code);
const find = (r: ValidateResponse, code: string) => [...r.render.errors, ...r.render.warnings].filter((f) => f.code === code);

describe('audience and suppression', () => {
  const dir = contacts([
    ['c1', 'ok@example.com', 'Ann', 'cs', 'CZ', true, false, 'l1'],
    ['c2', 'bad-address', 'Bob', 'cs', 'CZ', false, true, 'l1'], // unsubscribed wins over invalid and no consent
    ['c3', 'also-bad', 'Cy', 'cs', 'CZ', false, false, 'l1'], // invalid wins over no consent
    ['c4', 'cy@example.com', 'Di', 'cs', 'CZ', false, false, 'l1;l2'], // no consent
    ['c5', null, 'Ed', 'cs', 'SK', true, false, 'l2'], // missing address
    ['c6', 'OK@Example.com ', 'Fay', 'en', 'SK', true, false, 'l2'], // the same address as c1
    ['c7', 'x@y.dev', 'Gil', 'en', 'SK', null, false, 'l3'], // consent unknown: no consent
    ['c8', 'a@b', 'Hal', null, 'DE', true, false, 'l3'], // no dot in the domain
    ['c1', 'other@example.com', 'Dup', 'cs', 'CZ', true, false, 'l9'], // a second row for c1: the first counts
  ]);

  it('counts each contact once, first reason first, and the breakdown adds up', async () => {
    const r = await validate(dir, { audience: { lists: ['l1', 'l2', 'l3'] }, assets: [asset()] });
    expect(r.audience).toEqual({
      intended: 7,
      suppressed: 6,
      deliverable: 1,
      suppressionBreakdown: { unsubscribed: 1, invalidEmail: 3, noConsent: 2 },
    });
    const b = r.audience.suppressionBreakdown;
    expect(b.unsubscribed + b.invalidEmail + b.noConsent).toBe(r.audience.suppressed);
    expect(r.audience.deliverable).toBe(r.audience.intended - r.audience.suppressed);
    expect(find(r, 'duplicate_email')).toEqual([expect.objectContaining({ count: 1 })]);
  });

  it("finds duplicate addresses alike when contacts have merge fields named address or kept (the audience's own columns are apart)", async () => {
    const header = [...CONTACT_HEADER, 'address', 'kept'];
    const merged = dataset({
      'contacts.csv': csv(header, [
        ['c1', 'ok@example.com', 'Ann', 'cs', 'CZ', true, false, 'l1', 'Street 1', 'no'],
        ['c2', ' OK@example.COM', 'Bob', 'cs', 'CZ', true, false, 'l1', 'Street 1', 'yes'],
        ['c3', 'z@example.com', 'Cy', 'cs', 'CZ', true, false, 'l1', 'Street 2', 'maybe'],
      ]),
    });
    const r = await validate(merged, { audience: { lists: ['l1'] }, assets: [asset({ subject: 'Hi {{ contact.first_name }} of {{ contact.address }}, {{ contact.kept }}' })] });
    expect(r.audience).toMatchObject({ intended: 2, deliverable: 2 });
    expect(find(r, 'duplicate_email')).toEqual([expect.objectContaining({ count: 1 })]);
    expect(r.render.errors).toEqual([]);
    // the contact's own address and kept, not the e-mail or a flag of ours
    expect(r.render.samples.length).toBeGreaterThan(0);
    for (const sample of r.render.samples) expect(sample.subject).toMatch(/^Hi (Ann of Street 1, no|Cy of Street 2, maybe)$/);
    expect(codes(r.render.warnings).filter((c) => c.includes('variable'))).toEqual([]);
  });

  it('selects by lists or contact ids, then narrows by excluded lists, languages and countries', async () => {
    const intended = async (audience: Record<string, unknown>) => (await validate(dir, { audience, assets: [asset()] })).audience.intended;
    expect(await intended({ lists: ['l2'] })).toBe(3); // c4, c5, c6 (c6 has c1's address, but c1 is not selected)
    expect(await intended({ contactIds: ['c7', 'c8'] })).toBe(2);
    expect(await intended({ contactIds: ['c7'], lists: ['l2'] })).toBe(4);
    expect(await intended({ lists: ['l1', 'l2'], excludeLists: ['l2'] })).toBe(3);
    expect(await intended({ lists: ['l1', 'l2', 'l3'], languages: ['EN'] })).toBe(2); // c6 and c7: c1 is not selected, so c6 is no duplicate
    expect(await intended({ lists: ['l1', 'l2', 'l3'], languages: ['und'] })).toBe(1);
    expect(await intended({ lists: ['l1', 'l2', 'l3'], countries: ['sk'] })).toBe(3);
    expect(await intended({ lists: ["l1' OR '1'='1"] })).toBe(0);
  });
});

describe('assets per language', () => {
  const dir = contacts([
    ['c1', 'a@x.dev', 'A', 'cs', 'CZ', true, false, 'l'],
    ['c2', 'b@x.dev', 'B', 'cs', 'CZ', true, false, 'l'],
    ['c3', 'c@x.dev', 'C', 'sk', 'SK', true, false, 'l'],
    ['c4', 'd@x.dev', 'D', null, 'SK', true, false, 'l'],
  ]);

  it('gives each language its asset, falls back to the one without a language, and says so', async () => {
    const r = await validate(dir, { audience: { lists: ['l'] }, assets: [asset({ language: 'cs' }), asset()] });
    expect(r.languages).toEqual([
      { language: 'cs', recipients: 2, assetRef: 'inline:0' },
      { language: 'sk', recipients: 1, assetRef: 'inline:1' },
      { language: 'und', recipients: 1, assetRef: 'inline:1' },
    ]);
    expect(find(r, 'language_fallback').map((f) => [f.language, f.count])).toEqual([['sk', 1], ['und', 1]]);
    expect(r.render.errors).toEqual([]);
  });

  it('is an error, with the recipient count, when a language has no asset', async () => {
    const r = await validate(dir, { audience: { lists: ['l'] }, assets: [asset({ language: 'cs' })] });
    expect(r.render.errors.map((f) => [f.code, f.language, f.count])).toEqual([
      ['no_asset_for_language', 'sk', 1],
      ['no_asset_for_language', 'und', 1],
    ]);
    expect(r.languages.map((l) => l.language)).toEqual(['cs']);
  });

  it('refuses two assets for one language, and unknown asset ids', async () => {
    const r = await validate(dir, { audience: { lists: ['l'] }, assets: [asset({ language: 'cs' }), asset({ language: 'CS' }), asset(), { assetId: 'nope' }] });
    expect(codes(r.render.errors)).toEqual(['asset_not_found', 'duplicate_asset_language']);
  });

  it('looks assets up by id in the dataset', async () => {
    const withAssets = contacts([['c1', 'a@x.dev', 'A', 'cs', 'CZ', true, false, 'l']], {
      'assets.csv': csv(['asset_id', 'language', 'subject', 'html', 'text'], [['promo-cs', 'cs', 'Ahoj {{ contact.firstName }}', HTML, 'Ahoj']]),
    });
    const r = await validate(withAssets, { audience: { lists: ['l'] }, assets: [{ assetId: 'promo-cs' }] });
    expect(r.languages).toEqual([{ language: 'cs', recipients: 1, assetRef: 'promo-cs' }]);
    // the text part rendered too: its excerpt beside the HTML's, and in the digest
    expect(r.render.samples).toEqual([{ language: 'cs', contactId: 'c1', subject: 'Ahoj A', htmlExcerpt: expect.stringContaining('<p>Hi</p>'), textExcerpt: 'Ahoj', digest: expect.stringMatching(/^[0-9a-f]{16}$/) }]);
  });

  it('has no recipients when everyone is suppressed or nobody is selected', async () => {
    expect(codes((await validate(dir, { audience: { lists: ['none'] }, assets: [asset()] })).render.errors)).toEqual(['no_recipients', 'unknown_list']);
  });
});

describe('templates and variables', () => {
  const dir = contacts(
    [
      ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'l'],
      ['c2', 'b@x.dev', null, 'cs', 'CZ', true, false, 'l'],
      ['c3', 'c@x.dev', '', 'cs', 'CZ', true, false, 'l'],
      ['c4', 'd@x.dev', 'Dan', 'cs', 'CZ', true, false, 'l'],
      ['c5', 'bad', null, 'cs', 'CZ', true, false, 'l'], // suppressed: not counted
    ],
    {},
  );
  const run = (a: Record<string, unknown>, variables: Record<string, unknown> = {}, options: Record<string, unknown> = {}) =>
    validate(dir, { audience: { lists: ['l'] }, assets: [asset(a)], variables, options });

  it('counts, over every deliverable recipient, those a printed variable would be empty for', async () => {
    const r = await run({ subject: 'Hi {{ contact.firstName }}', html: `${HTML}{{ contact.firstName }} {{ contact.nickname }} {{ coupon }} {{ shop.name }}` }, { shop: { name: 'S' } });
    const unresolved = find(r, 'unresolved_variable').map((f) => [f.message.split(' ')[1], f.count]);
    expect(unresolved).toEqual([['contact.firstName', 2]]);
    // A field no contact has and a variable the request does not give are errors (issue 20).
    expect(find(r, 'unknown_variable').map((f) => f.message.split(' ')[1])).toEqual(['contact.nickname', 'coupon']);
    expect(find(r, 'unresolved_variable')[0]!.field).toBe('subject');
  });

  it('does not count variables given a default, only tested in a condition, or present', async () => {
    const r = await run(
      { subject: 'Hi {{ contact.firstName | default: "there" }}', html: `${HTML}{% if contact.nickname %}x{% endif %}{{ coupon }}{{ contact.email }}` },
      { coupon: 'SAVE' },
    );
    expect(find(r, 'unresolved_variable')).toEqual([]);
  });

  it('does not count names the template binds itself (for, assign, capture)', async () => {
    const r = await run(
      { html: `${HTML}{% for p in products %}{{ p.name }} {{ forloop.index }}{% endfor %}{% assign who = contact.email %}{{ who }}{% capture x %}y{% endcapture %}{{ x }}` },
      { products: [{ name: 'A' }] },
    );
    expect(find(r, 'unresolved_variable')).toEqual([]);
    const missing = await run({ html: `${HTML}{% for p in products %}{{ p.name }}{% endfor %}{{ products.size }}` });
    expect(find(missing, 'unknown_variable').map((f) => f.message.split(' ')[1])).toEqual(['products.size']);
  });

  it('reports a syntax error with its field and line, and renders nothing from that asset', async () => {
    const r = await run({ html: 'line one\nline two\n{% if contact.firstName %}never closed' });
    expect(r.render.errors).toEqual([
      { code: 'template_syntax', message: expect.stringMatching(/^html line 3: tag \{% if contact.firstName %\} not closed/), assetRef: 'inline:0', field: 'html', line: 3 },
    ]);
    expect(r.render.samples).toEqual([]);
    const subject = await run({ subject: 'Hi {{ contact.firstName | nosuchfilter }}' });
    expect(find(subject, 'template_syntax')[0]).toMatchObject({ field: 'subject', line: 1 });
  });

  it('requires a subject and warns without a text part', async () => {
    const r = await run({ subject: '  ', text: undefined });
    expect(codes(r.render.errors)).toEqual(['missing_subject']);
    expect(codes(r.render.warnings)).toContain('missing_text_part');
  });

  it('renders sampleSize samples per language, the same ones every time, with contact and variables', async () => {
    const r1 = await run({ subject: '{{ greeting }} {{ contact.firstName | default: "you" }}' }, { greeting: 'Ahoj' }, { sampleSize: 3 });
    const r2 = await run({ subject: '{{ greeting }} {{ contact.firstName | default: "you" }}' }, { greeting: 'Ahoj' }, { sampleSize: 3 });
    expect(r1.render.samples).toHaveLength(3);
    expect(r1.render.samples).toEqual(r2.render.samples);
    for (const s of r1.render.samples) expect(s.subject).toMatch(/^Ahoj (Ann|Dan|you)$/);
    expect(new Set(r1.render.samples.map((s) => s.contactId)).size).toBe(3);
  });

  it('resolveOnly gives counts and languages, and neither renders nor checks templates', async () => {
    const r = await run({ html: '{% if x %}broken' }, {}, { resolveOnly: true });
    expect(r.audience.deliverable).toBe(4);
    expect(r.languages).toEqual([{ language: 'cs', recipients: 4, assetRef: 'inline:0' }]);
    expect(r.render.samples).toEqual([]);
    expect(r.render.errors).toEqual([]);
    expect(codes(r.render.warnings)).toEqual(['language_fallback']); // languages are resolved; templates are not looked at
  });
});

describe('HTML checks', () => {
  const dir = contacts([['c1', 'a@x.dev', 'A', 'cs', 'CZ', true, false, 'l']]);
  const check = async (html: string) => validate(dir, { audience: { lists: ['l'] }, assets: [asset({ html })] });
  const unsubscribe = '<a href="https://x.dev/u">Unsubscribe</a>';

  it.each([
    ['image_missing_alt', `<img src="https://x.dev/a.png"><img src="https://x.dev/b.png" alt="">${unsubscribe}`, 1],
    ['insecure_link', `<a href="http://x.dev/a">a</a><a href="HTTP://x.dev/b">b</a><a href="https://x.dev">c</a>${unsubscribe}`, 2],
    ['empty_link', `<a href="">a</a><a href="#">b</a><a>c</a>${unsubscribe}`, 3],
    ['placeholder_link', `<a href="[Unsubscribe_Preferences]">a</a><a href="<%url%>">b</a><a href="https://www.example.com/x">c</a><a href="javascript:alert(1)">d</a>${unsubscribe}`, 4],
    ['relative_link', `<a href="facebook.com">a</a><a href="/page">b</a>${unsubscribe}`, 2],
  ])('%s', async (code, html, count) => {
    const r = await check(html);
    expect(find(r, code)).toEqual([expect.objectContaining({ code, count, field: 'html', assetRef: 'inline:0' })]);
  });

  it('does not flag links filled in per recipient', async () => {
    const r = await check(`<a href="{{ unsubscribe_url }}">Unsubscribe</a><a href="https://x.dev/?c={{ contact.contactId }}">x</a>`);
    expect(r.render.warnings.filter((f) => f.code.endsWith('_link'))).toEqual([]);
  });

  it('finds an unsubscribe link by its address or its text, in several languages', async () => {
    for (const html of ['<a href="https://x.dev/unsubscribe?c=1">here</a>', '<a href="https://x.dev/p">Odhlásit odběr</a>', '<a href="https://x.dev/p"><b>Opt-out</b></a>']) {
      expect(find(await check(html), 'missing_unsubscribe_link')).toEqual([]);
    }
    expect(find(await check('<p>unsubscribe by replying</p>'), 'missing_unsubscribe_link')).toHaveLength(1);
  });

  it('warns above 102 KB, the size where Gmail clips, and not at it', async () => {
    const base = `<html><body>${unsubscribe}</body></html>`;
    const pad = (bytes: number) => `<!--${'x'.repeat(bytes - Buffer.byteLength(base) - 7)}-->`;
    expect(find(await check(base.replace('</body>', `${pad(102 * 1024)}</body>`)), 'html_too_large')).toEqual([]);
    expect(find(await check(base.replace('</body>', `${pad(102 * 1024 + 1)}</body>`)), 'html_too_large')).toHaveLength(1);
  });
});

describe('request validation', () => {
  const dir = contacts([['c1', 'a@x.dev', 'A', 'cs', 'CZ', true, false, 'l']]);
  it.each([
    [null, 'body'],
    [{ assets: [asset()] }, 'audience'],
    [{ audience: { lists: [] }, assets: [asset()] }, 'audience'],
    [{ audience: { lists: 'l' }, assets: [asset()] }, 'audience.lists'],
    [{ audience: { lists: ['l'], segments: ['x'] }, assets: [asset()] }, 'audience.segments'],
    [{ audience: { lists: ['l'] } }, 'assets'],
    [{ audience: { lists: ['l'] }, assets: [{ subject: 'x' }] }, 'assets[0].html'],
    [{ audience: { lists: ['l'] }, assets: [{ assetId: 'a', html: 'x' }] }, 'assets[0]'],
    [{ audience: { lists: ['l'] }, assets: [asset()], options: { sampleSize: 21 } }, 'options.sampleSize'],
    [{ audience: { lists: ['l'] }, assets: [asset()], options: { resolveOnly: 'yes' } }, 'options.resolveOnly'],
    [{ audience: { lists: ['l'] }, assets: [asset()], options: { trackingDomain: ['shop.example.com'] } }, 'options.trackingDomain'],
    [{ audience: { lists: ['l'], languages: [] }, assets: [asset()] }, 'audience.languages'],
    [{ audience: { lists: ['l'], countries: [] }, assets: [asset()] }, 'audience.countries'],
    [{ audience: { lists: ['l'] }, assets: [asset()], options: { sampelSize: 3 } }, 'options.sampelSize'],
    [{ audience: { lists: ['l'] }, assets: [asset()], variables: [] }, 'variables'],
    [{ audience: { lists: ['l'] }, assets: [asset()], channel: 'sms' }, 'channel'],
  ])('rejects %j naming %s', async (body, field) => {
    const r = await validate(dir, body);
    expect(r.render.errors.map((f) => [f.code, f.field])).toContainEqual(['invalid_request', field]);
    expect(r.audience.intended).toBe(0);
  });
});

describe('public e-mail templates (../shared/fixtures/email-templates)', () => {
  const root = join(import.meta.dirname, '..', '..', 'shared', 'fixtures', 'email-templates');
  const present = existsSync(root);
  it.skipIf(present)('skipped: ../shared/fixtures/email-templates is not beside this checkout', () => undefined);

  const ISSUE20 = ['missing_html_lang', 'layout_table_role', 'client_unsupported'];
  const expectations: [string, string[], string[]][] = [
    // a "#" unsubscribe link, one http link, no images
    // (each also has no lang on <html>, layout tables without role="presentation" and CSS or HTML some default clients do not support)
    ['leemunroe/email.html', [], ['missing_text_part', 'insecure_link', 'empty_link', ...ISSUE20]],
    // transactional mail: no unsubscribe link, http links
    ['mailgun/action.html', [], ['missing_text_part', 'missing_unsubscribe_link', 'insecure_link', ...ISSUE20]],
    ['mailgun/billing.html', [], ['missing_text_part', 'missing_unsubscribe_link', 'insecure_link', 'placeholder_link', ...ISSUE20]],
    // Handlebars, not Liquid; SendGrid merge tags as links; links without a scheme
    ['sendgrid/different_languages.html', ['template_syntax'], ['missing_text_part', 'placeholder_link', 'relative_link', ...ISSUE20]],
  ];
  it.runIf(present).each(expectations)('%s', async (file, errors, warnings) => {
    const html = readFileSync(join(root, file), 'utf8');
    const dir = contacts([['c1', 'a@x.dev', 'A', 'en', 'US', true, false, 'l']]);
    const r = await validate(dir, { audience: { lists: ['l'] }, assets: [{ language: 'en', subject: 'Test', html }] });
    expect(codes(r.render.errors)).toEqual(errors);
    expect([...new Set(codes(r.render.warnings))]).toEqual(warnings);
    if (file.startsWith('sendgrid')) expect(r.render.errors[0]).toMatchObject({ line: 145, message: expect.stringMatching(/#if english/) });
    if (file === 'mailgun/action.html') expect(find(r, 'insecure_link')[0]!.count).toBe(2);
  });
});

/** samples/shop opened once (for validation) and lent to the commands of convx validate's tests after the first, which opens it afresh (kept-backends.ts). */
const kept = keptBackends();

describe('convx validate', () => {
  const argv = (file: string, ...rest: string[]) => ['validate', join(SAMPLES, '..', 'deliveries', file), '--data', SAMPLES, ...rest];

  it('exits 0 on the good sample with a readable summary', async () => {
    const run = await cli(argv('welcome.json'), { tty: true, env: { NO_COLOR: '1' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Audience\n {2}intended {5}\d+/);
    expect(run.stdout).toMatch(/Languages\n {2}cs +\d+ {2}welcome-cs\n {2}en +\d+ {2}welcome-en/);
    expect(run.stdout).toMatch(/Samples\n {2}cs c-\d+ {2}Vítejte, /);
    expect(run.stdout).toMatch(/OK: \d+ deliverable, 0 errors, 0 warnings/);
  });

  it.each([
    ['defect-missing-language.json', 'no_asset_for_language'],
    ['defect-unknown-asset.json', 'asset_not_found'],
    ['defect-template-syntax.json', 'template_syntax'],
    ['defect-missing-subject.json', 'missing_subject'],
    ['defect-no-recipients.json', 'no_recipients'],
    ['defect-unknown-variable.json', 'unknown_variable'],
  ])('exits 1 on %s naming %s', async (file, code) => {
    const run = await kept(argv(file, '-o', 'github'));
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`^::error file=[^,]+${file.replace('.', '\\.')}(,line=\\d+)?,title=convx ${code}::`, 'm'));
  });

  it('fails on warnings only beyond --max-warnings', async () => {
    expect((await kept(argv('warnings.json'))).code).toBe(0);
    expect((await kept(argv('warnings.json', '--max-warnings', '6'))).code).toBe(0);
    const strict = await kept(argv('warnings.json', '--max-warnings', '5', '-o', 'table'));
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/NOT READY: 6 warnings \(more than --max-warnings 5\)/);
  });

  it('prints the interface’s body as json (the default when piped), overriding options by flags', async () => {
    const body = JSON.parse((await kept(argv('welcome.json', '--sample-size', '3'))).stdout);
    expect(Object.keys(body)).toEqual(['channel', 'audience', 'languages', 'render']);
    expect(body.render.samples).toHaveLength(6);
    const resolved = JSON.parse((await kept(argv('welcome.json', '--resolve-only'))).stdout);
    expect(resolved.render.samples).toEqual([]);
    expect(resolved.languages).toEqual(body.languages);
  });

  it('writes JUnit with one test case per check', async () => {
    const xml = (await kept(argv('defect-unknown-asset.json', '-o', 'junit'))).stdout;
    const total = CHECKS.errors.length + CHECKS.warnings.length + CHECKS.information.length;
    expect(xml).toMatch(new RegExp(`<testsuites name="convx validate" tests="${total}" failures="1">`));
    expect(xml.match(/<testcase /g)).toHaveLength(total);
    expect(xml).toMatch(/<testcase classname="convx.validate.errors" name="asset_not_found">\s*<failure type="error" message="no asset welcome-fr in the dataset's assets"/);
    expect(xml).toMatch(/<testcase classname="convx.validate.errors" name="template_syntax"><\/testcase>/);
  });

  it('reads the request from stdin, and exits 2 on a request it cannot read', async () => {
    const text = readFileSync(join(SAMPLES, '..', 'deliveries', 'welcome.json'), 'utf8');
    expect((await kept(['validate', '-', '--data', SAMPLES], { stdin: text })).code).toBe(0);
    const invalid = await kept(['validate', '-', '--data', SAMPLES, '-o', 'github'], { stdin: '{"audience":{}}' });
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toMatch(/::error title=convx invalid_request::audience: needs at least one of lists or contactIds/);
    const notJson = await kept(['validate', '-', '--data', SAMPLES], { stdin: '{oops' });
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/stdin is not JSON/);
    const missing = await kept(['validate', 'nope.json', '--data', SAMPLES]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/not found: nope.json/);
    const format = await kept(['validate', '-', '--data', SAMPLES, '-o', 'csv'], { stdin: text });
    expect(format.stderr).toMatch(/-o: "csv" is not one of table, json, github, junit, html, sarif/);
  });
});

describe('server and API mode', () => {
  const SECRET = 'validate-secret';
  let server: Awaited<ReturnType<typeof startServer>>;
  let token = '';
  beforeAll(async () => {
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(SECRET, 'shop', '1h');
  });
  afterAll(async () => server?.close());

  it('the server answers with the JSON local mode gives, findings in a 200', async () => {
    const app = server.app;
    const local = await openLocalBackend(SAMPLES, suiteThreadsOption());
    try {
      for (const file of ['welcome.json', 'defect-missing-language.json', 'warnings.json']) {
        const body = JSON.parse(readFileSync(join(SAMPLES, '..', 'deliveries', file), 'utf8'));
        const res = await app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', headers: { authorization: `Bearer ${token}` }, payload: body });
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(JSON.stringify(await local.validateEmail(body)));
      }
    } finally {
      await local.close();
    }
    const invalid = await app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', headers: { authorization: `Bearer ${token}` }, payload: { audience: 1 } });
    expect(invalid.statusCode).toBe(200);
    expect(JSON.parse(invalid.body).render.errors[0].code).toBe('invalid_request');
    const notJson = await app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: '{oops' });
    expect(notJson.statusCode).toBe(400);
    expect(JSON.parse(notJson.body).type).toBe('urn:convx:problem:invalid-body');
    const anonymous = await app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', payload: {} });
    expect(anonymous.statusCode).toBe(403);
  });

  it('API mode prints what local mode prints, in every format, with the same exit code', async () => {
    for (const file of ['welcome.json', 'defect-template-syntax.json', 'warnings.json']) {
      for (const format of ['json', 'table', 'github', 'junit']) {
        const path = join(SAMPLES, '..', 'deliveries', file);
        const local = await kept(['validate', path, '--data', SAMPLES, '-o', format]);
        const api = await cli(['validate', path, '--api', `${server.url}/v1`, '--delivery-api', `${server.url}/v4`, '-o', format], { env: { CONVX_TOKEN: token } });
        expect(api.stdout, `${file} ${format}`).toBe(local.stdout);
        expect(api.code).toBe(local.code);
        expect(api.stderr).not.toContain(token);
      }
    }
    // Several files, a glob and the per-code flags act on the results in the CLI: the same in both modes.
    const several = [join(SAMPLES, '..', 'deliveries', 'w*.json'), join(SAMPLES, '..', 'deliveries', 'defect-unknown-variable.json'), '--fail-on', 'insecure_link', '--ignore', 'empty_link'];
    for (const format of ['json', 'github', 'junit']) {
      const local = await kept(['validate', ...several, '--data', SAMPLES, '-o', format]);
      const api = await cli(['validate', ...several, '--api', `${server.url}/v1`, '--delivery-api', `${server.url}/v4`, '-o', format], { env: { CONVX_TOKEN: token } });
      expect(api.stdout, format).toBe(local.stdout);
      expect([api.code, api.stderr]).toEqual([local.code, local.stderr]);
      expect(local.code).toBe(1);
    }
    const noDelivery = await cli(['validate', join(SAMPLES, '..', 'deliveries', 'welcome.json'), '--api', `${server.url}/v1`], { env: { CONVX_TOKEN: token } });
    expect(noDelivery.code).toBe(2);
    expect(noDelivery.stderr).toMatch(/needs the delivery base URL: --delivery-api/);
  });
});

describe('a dataset with contacts only', () => {
  it('validates, and says it cannot report', async () => {
    const dir = contacts([['c1', 'a@x.dev', 'A', 'cs', 'CZ', true, false, 'l']]);
    expect((await validate(dir, { audience: { lists: ['l'] }, assets: [asset()] })).audience.deliverable).toBe(1);
    const report = await cli(['report', '--data', dir]);
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(/has no orders table/);
  });
});
