/**
 * The rules of a delivery validation that need no database, called directly
 * with plain data: no dataset, no DuckDB (src/validation/delivery.ts), and the
 * template work on the sandbox with recipients given by hand (src/validation/render.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TooLargeError } from '../src/errors.js';
import { GMAIL_CLIP_BYTES, MAX_ASSETS, MAX_AUDIENCE_IDS, normalizeRequest, type Finding, type NormalizedRequest } from '../src/model/validation.js';
import {
  allParsed,
  assetFindings,
  audienceFindings,
  audienceSummary,
  checkRequestSize,
  languageCoverage,
  MAX_CHECKED_VARIABLES,
  orderSamples,
  printedVariablesOf,
  resolveAssets,
  unresolvedVariables,
  type AudienceCounts,
  type Field,
  type ResolvedAsset,
} from '../src/validation/delivery.js';
import { DEFAULT_RENDER_LIMITS } from '../src/validation/limits.js';
import { checkTemplates, digestOf, renderSamples, TemplateWork } from '../src/validation/render.js';
import { TemplateSandbox } from '../src/validation/sandbox.js';

const UNSUBSCRIBE = '<a href="https://x.dev/unsubscribe">Unsubscribe</a>';
const asset = (content: ResolvedAsset['content'] = {}, ref = 'a-1', language: string | null = 'cs'): ResolvedAsset => ({
  ref,
  language,
  content: { subject: 'Hello', html: `<p>Hi</p>${UNSUBSCRIBE}`, text: 'Hi', ...content },
});
const codes = (findings: Finding[]) => findings.map((f) => f.code);
const html = (body: string) => assetFindings(asset({ html: `${body}${UNSUBSCRIBE}` })).warnings;

describe('the request size', () => {
  const request = (entries: number, assets = 1): NormalizedRequest => ({
    audience: { lists: [], contactIds: Array.from({ length: entries }, (_, i) => `c${i}`), excludeLists: [] },
    assets: Array.from({ length: assets }, () => ({ html: '<p>x</p>' })),
    variables: {},
    sampleSize: 1,
    resolveOnly: false,
  });

  it('takes audience entries up to the limit and refuses one more, naming the limit', () => {
    expect(() => checkRequestSize(request(MAX_AUDIENCE_IDS))).not.toThrow();
    const over = request(MAX_AUDIENCE_IDS);
    over.audience.languages = ['cs']; // every list counts
    expect(() => checkRequestSize(over)).toThrow(TooLargeError);
    expect(() => checkRequestSize(over)).toThrow(/the audience lists 100,001 entries .*at most 100,000 are allowed/);
  });

  it('takes assets up to the limit and refuses one more', () => {
    expect(() => checkRequestSize(request(1, MAX_ASSETS))).not.toThrow();
    let error: unknown;
    try {
      checkRequestSize(request(1, MAX_ASSETS + 1));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TooLargeError);
    expect((error as TooLargeError).limit).toBe('maxAssets');
    expect((error as TooLargeError).message).toBe(`the request gives ${MAX_ASSETS + 1} assets; at most ${MAX_ASSETS} are allowed (one per language)`);
  });
});

describe('the audience', () => {
  const counts = (extra: Partial<AudienceCounts>): AudienceCounts => ({
    intended: 10,
    suppressed: 3,
    unsubscribed: 1,
    invalidEmail: 1,
    noConsent: 1,
    duplicates: 0,
    ...extra,
  });

  it('is summarised with deliverable = intended - suppressed', () => {
    expect(audienceSummary(counts({}))).toEqual({
      intended: 10,
      suppressed: 3,
      deliverable: 7,
      suppressionBreakdown: { unsubscribed: 1, invalidEmail: 1, noConsent: 1 },
    });
  });

  it('warns of duplicate addresses from one on, in the singular and the plural', () => {
    expect(audienceFindings(counts({})).warnings).toEqual([]);
    expect(audienceFindings(counts({ duplicates: 1 })).warnings).toEqual([
      {
        code: 'duplicate_email',
        message: '1 contact shares an e-mail address with another in the audience and will not get a second copy',
        count: 1,
      },
    ]);
    expect(audienceFindings(counts({ duplicates: 2 })).warnings[0]!.message).toMatch(/^2 contacts share/);
  });

  it('a request without lists or contactIds needs one; one given in a wrong shape is told once, as that', () => {
    const problems = (audience: unknown) => normalizeRequest({ audience, assets: [{ html: 'x' }] }).problems.map((p) => p.message);
    expect(problems({})).toEqual([expect.stringMatching(/^audience: needs at least one of lists or contactIds/)]);
    expect(problems({ lists: [], contactIds: [] })).toEqual([expect.stringMatching(/^audience: needs at least one of lists or contactIds/)]);
    expect(problems({ lists: 'l-1' })).toEqual([expect.stringMatching(/^audience\.lists: must be an array of strings/)]);
    expect(problems({ contactIds: [1, 2] })).toEqual([expect.stringMatching(/^audience\.contactIds: must be an array of strings/)]);
    // a list of the wrong shape beside a good one: the one problem
    expect(problems({ lists: 'l-1', contactIds: ['c-1'] })).toEqual([expect.stringMatching(/^audience\.lists: must be an array of strings/)]);
    expect(problems({ lists: ['l-1'] })).toEqual([]);
  });

  it('is an error when nobody is deliverable: one deliverable is enough', () => {
    expect(audienceFindings(counts({ intended: 4, suppressed: 3 })).errors).toEqual([]);
    expect(audienceFindings(counts({ intended: 3, suppressed: 3 })).errors).toEqual([
      { code: 'no_recipients', message: 'all 3 contacts of the audience are suppressed', count: 0 },
    ]);
    expect(audienceFindings(counts({ intended: 1, suppressed: 1 })).errors[0]!.message).toBe('all 1 contact of the audience are suppressed');
    expect(audienceFindings(counts({ intended: 0, suppressed: 0 })).errors).toEqual([
      { code: 'no_recipients', message: 'the audience selects no contacts', count: 0 },
    ]);
  });
});

describe('assets', () => {
  it('resolves stored and inline assets in the request order; an unknown id is asset_not_found', () => {
    const stored = new Map([['welcome', { asset_id: 'welcome', language: ' CS ', subject: 'Ahoj', html: '<p/>', text: 7, extra: 'x' }]]);
    const { assets, errors } = resolveAssets(
      [{ assetId: 'welcome' }, { assetId: 'gone' }, { language: '', subject: 'Hi', html: '<p/>', preheader: 'Pre' }],
      stored,
      true,
    );
    expect(assets).toEqual([
      { ref: 'welcome', language: 'cs', content: { subject: 'Ahoj', html: '<p/>' } },
      { ref: 'inline:2', language: null, content: { subject: 'Hi', preheader: 'Pre', html: '<p/>' } },
    ]);
    expect(errors).toEqual([{ code: 'asset_not_found', message: "no asset gone in the dataset's assets", assetRef: 'gone' }]);
    expect(resolveAssets([{ assetId: 'gone' }], new Map(), false).errors[0]!.message).toBe(
      'asset gone is referred to by id, but the dataset has no assets table',
    );
  });
});

describe('language coverage', () => {
  const found = [
    { language: 'cs', recipients: 5 },
    { language: 'en', recipients: 1 },
  ];

  it('gives each language its asset, and reports a language of the audience without one', () => {
    const cs = asset({}, 'a-cs', 'cs');
    const r = languageCoverage(found, [cs]);
    expect(r.languages).toEqual([{ language: 'cs', recipients: 5, assetRef: 'a-cs' }]);
    expect(r.errors).toEqual([
      {
        code: 'no_asset_for_language',
        message: 'no asset for language en and no asset without a language to fall back on; 1 recipient would get nothing',
        language: 'en',
        count: 1,
      },
    ]);
    expect(r.warnings).toEqual([]);
    expect(r.languagesOf.get(cs)).toEqual(['cs']);
  });

  it('serves the other languages with the asset without a language, as a warning', () => {
    const cs = asset({}, 'a-cs', 'cs');
    const any = asset({}, 'inline:1', null);
    const r = languageCoverage(found, [cs, any]);
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([
      { code: 'language_fallback', message: '1 recipient in language en gets inline:1, which has no language', language: 'en', assetRef: 'inline:1', count: 1 },
    ]);
    expect(r.languages.map((l) => l.assetRef)).toEqual(['a-cs', 'inline:1']);
    expect(r.languagesOf.get(any)).toEqual(['en']);
  });

  it('refuses two assets for one language, and two without a language', () => {
    const r = languageCoverage(found, [asset({}, 'x', 'cs'), asset({}, 'y', 'cs'), asset({}, 'n1', null), asset({}, 'n2', null)]);
    expect(r.errors).toEqual([
      { code: 'duplicate_asset_language', message: 'x and y are both for language cs; which one would be sent?', assetRef: 'y', language: 'cs' },
      { code: 'duplicate_asset_language', message: 'n1 and n2 all have no language; at most one asset may be the fallback', assetRef: 'n2' },
    ]);
    expect(r.languages).toEqual([
      { language: 'cs', recipients: 5, assetRef: 'x' },
      { language: 'en', recipients: 1, assetRef: 'n1' },
    ]);
  });

  it('orders samples as the languages are ordered', () => {
    const sample = (language: string) => ({ language, contactId: language, subject: '', htmlExcerpt: '' });
    const languages = [
      { language: 'en', recipients: 9, assetRef: 'a' },
      { language: 'cs', recipients: 2, assetRef: 'a' },
    ];
    expect(orderSamples([sample('cs'), sample('en'), sample('cs')], languages).map((s) => s.language)).toEqual(['en', 'cs', 'cs']);
  });
});

describe('the content of an asset', () => {
  it('passes a complete asset without findings', () => {
    expect(assetFindings(asset())).toEqual({ errors: [], warnings: [] });
  });

  it('needs a subject that is not blank (an error) and a text part (a warning)', () => {
    for (const subject of [undefined, '', '  \n']) {
      const r = assetFindings(asset({ subject }));
      expect(r.errors).toEqual([{ code: 'missing_subject', message: 'a-1 has no subject', assetRef: 'a-1', language: 'cs', field: 'subject' }]);
    }
    expect(assetFindings(asset({ subject: 'x' })).errors).toEqual([]);
    const noText = assetFindings({ ref: 'inline:0', language: null, content: { subject: 'S', html: UNSUBSCRIBE } });
    expect(noText.warnings).toEqual([
      { code: 'missing_text_part', message: 'inline:0 has no plain-text part; some clients and spam filters want one', assetRef: 'inline:0', field: 'text' },
    ]);
  });

  it('needs an unsubscribe link, said in the address or the text, in several languages', () => {
    expect(codes(assetFindings(asset({ html: '<a href="https://x.dev/">Home</a>' })).warnings)).toEqual(['missing_unsubscribe_link']);
    expect(assetFindings(asset({ html: '<p>unsubscribe</p>' })).warnings[0]).toEqual({
      code: 'missing_unsubscribe_link',
      message: 'a-1 has no unsubscribe link',
      assetRef: 'a-1',
      language: 'cs',
      field: 'html',
    });
    for (const link of ['<a href="https://x.dev/opt-out">x</a>', '<a href="https://x.dev/p">Odhlásit</a>', '<a href="https://x.dev/u">Abbestellen</a>']) {
      expect(assetFindings(asset({ html: link })).warnings).toEqual([]);
    }
  });

  it('reports images without alt text (alt="" is fine), listing three and cutting long sources', () => {
    expect(html('<img src="https://x.dev/a.png" alt="">')).toEqual([]);
    const long = `https://x.dev/${'a'.repeat(200)}.png`;
    const [finding] = html(`<img src="https://x.dev/1.png"><img><img src="${long}"><img src="https://x.dev/4.png">`);
    expect(finding).toEqual({
      code: 'image_missing_alt',
      message: `4 images without alt text: https://x.dev/1.png, (no src), ${long.slice(0, 120)}…, …`,
      assetRef: 'a-1',
      language: 'cs',
      field: 'html',
      count: 4,
    });
    expect(html('<img src="https://x.dev/1.png">')[0]!.message).toBe('1 image without alt text: https://x.dev/1.png');
  });

  it('reports each kind of bad link, in a fixed order, and leaves links filled in per recipient alone', () => {
    const r = html(
      '<a href="x.dev/page">r</a><a href="[Unsubscribe]">p</a><a href="#">e</a><a href="">e</a><a href="http://x.dev/">i</a><a href="{{ link }}">t</a><a href="https://x.dev/">ok</a>',
    );
    expect(r.map((f) => [f.code, f.message, f.count])).toEqual([
      ['insecure_link', '1 link over plain http: http://x.dev/', 1],
      ['empty_link', '2 links with an empty or "#" href', 2],
      ['placeholder_link', '1 link to a placeholder or an unusable scheme: [Unsubscribe]', 1],
      ['relative_link', '1 link without a scheme, which go nowhere from an inbox: x.dev/page', 1],
    ]);
    expect(html('<a href="javascript:alert(1)">j</a><a href="mailto:">m</a>')[0]!.count).toBe(2);
  });

  it('warns of HTML over the Gmail clip size, in bytes: at the limit no, one byte over yes', () => {
    const padded = (bytes: number) => `${UNSUBSCRIBE}<p>${'x'.repeat(bytes - UNSUBSCRIBE.length - 7)}</p>`;
    expect(Buffer.byteLength(padded(GMAIL_CLIP_BYTES))).toBe(GMAIL_CLIP_BYTES);
    expect(assetFindings(asset({ html: padded(GMAIL_CLIP_BYTES) })).warnings).toEqual([]);
    expect(assetFindings(asset({ html: padded(GMAIL_CLIP_BYTES + 1) })).warnings).toEqual([
      {
        code: 'html_too_large',
        message: 'the HTML is 103 KB; Gmail clips messages over 102 KB',
        assetRef: 'a-1',
        language: 'cs',
        field: 'html',
        count: GMAIL_CLIP_BYTES + 1,
      },
    ]);
    // Characters are not bytes: half as many two-byte characters are as large.
    const accented = `${UNSUBSCRIBE}<p>${'é'.repeat(GMAIL_CLIP_BYTES / 2)}</p>`;
    expect(codes(assetFindings(asset({ html: accented })).warnings)).toEqual(['html_too_large']);
  });
});

describe('printed variables', () => {
  const all = new Set<Field>(['subject', 'preheader', 'html', 'text']);

  it('are those printed without a default, from the parts that parse, with where each value comes from', () => {
    const a = asset({
      subject: 'Hi {{ contact.firstName }} {{ promo }}',
      html: `{{ contact.firstName }} {{ contact.address.city }} {{ contact.lastName | default: "" }} {% if vip %}{% endif %} {{ code }}${UNSUBSCRIBE}`,
      text: '{{ broken',
    });
    expect(printedVariablesOf(a, all, { promo: '', code: 'X1' })).toEqual([
      { key: 'contact.firstName', path: ['contact', 'firstName'], fields: ['subject', 'html'], source: 'contact', contactField: 'firstName' },
      { key: 'promo', path: ['promo'], fields: ['subject'], source: 'variables', emptyInRequest: true },
      { key: 'contact.address.city', path: ['contact', 'address', 'city'], fields: ['html'], source: 'contact', contactField: undefined },
      { key: 'code', path: ['code'], fields: ['html'], source: 'variables', emptyInRequest: false },
    ]);
    expect(printedVariablesOf(a, new Set<Field>(['html']), {}).map((v) => v.key)).toEqual(['contact.firstName', 'contact.address.city', 'code']);
  });

  it('are counted up to a bound per asset', () => {
    const many = Array.from({ length: MAX_CHECKED_VARIABLES + 5 }, (_, i) => `{{ v${i} }}`).join(' ');
    expect(printedVariablesOf(asset({ html: many }), all, {})).toHaveLength(MAX_CHECKED_VARIABLES);
  });

  it('empty for some recipients are unresolved_variable warnings with the count', () => {
    const a = asset({ subject: '{{ contact.firstName }} {{ promo }}' });
    const printed = printedVariablesOf(a, all, {});
    expect(unresolvedVariables(a, printed, new Map([['contact.firstName', 0], ['promo', 2]]))).toEqual([
      {
        code: 'unresolved_variable',
        message: '{{ promo }} in subject is empty for 2 deliverable recipients (variable without a value; add one, or a default filter)',
        assetRef: 'a-1',
        field: 'subject',
        count: 2,
      },
    ]);
    expect(unresolvedVariables(a, printed, new Map([['contact.firstName', 1]]))[0]!.message).toBe(
      '{{ contact.firstName }} in subject is empty for 1 deliverable recipient (contact field without a value; add one, or a default filter)',
    );
  });
});

describe('template checks and samples on the sandbox, recipients given by hand', () => {
  const sandbox = new TemplateSandbox(DEFAULT_RENDER_LIMITS, { key: 'delivery-rules-test' });
  afterAll(() => sandbox.close());

  it('parses each part and says where one does not parse; an asset with such a part is not rendered', async () => {
    const errors: Finding[] = [];
    const a = asset({ subject: 'Hi', html: `{% if x %}${UNSUBSCRIBE}`, text: '{% include "footer" %}' });
    const parsed = await checkTemplates(a, new TemplateWork(sandbox, errors));
    expect([...parsed]).toEqual(['subject']);
    expect(errors.map((f) => [f.code, f.field])).toEqual([
      ['template_syntax', 'html'],
      ['template_file_access', 'text'],
    ]);
    expect(allParsed(a, parsed)).toBe(false);
    expect(allParsed(asset({ html: undefined, text: undefined }), new Set<Field>(['subject']))).toBe(true);
  });

  it('renders the subject and HTML with the request variables and the contact', async () => {
    const errors: Finding[] = [];
    const a = asset({ subject: 'Hi {{ contact.firstName }}, use {{ code }}', html: `<body><p>{{ contact.firstName }}</p>${UNSUBSCRIBE}</body>` });
    const request = normalizeRequest({ audience: { lists: ['l'] }, assets: [{ html: 'x' }], variables: { code: 'X1' } }).request!;
    const samples = await renderSamples(
      a,
      [
        { language: 'cs', contactId: 'c1', contact: { contactId: 'c1', firstName: 'Ann' } },
        { language: 'cs', contactId: 'c2', contact: { contactId: 'c2', firstName: 'Bob' } },
      ],
      request.variables,
      new TemplateWork(sandbox, errors),
    );
    expect(errors).toEqual([]);
    // the text part's excerpt, and the digest of the whole rendered subject, HTML and text: samples that differ differ in it
    expect(samples).toEqual([
      { language: 'cs', contactId: 'c1', subject: 'Hi Ann, use X1', htmlExcerpt: `<p>Ann</p>${UNSUBSCRIBE}`, textExcerpt: 'Hi', digest: digestOf('Hi Ann, use X1', `<body><p>Ann</p>${UNSUBSCRIBE}</body>`, 'Hi') },
      { language: 'cs', contactId: 'c2', subject: 'Hi Bob, use X1', htmlExcerpt: `<p>Bob</p>${UNSUBSCRIBE}`, textExcerpt: 'Hi', digest: digestOf('Hi Bob, use X1', `<body><p>Bob</p>${UNSUBSCRIBE}</body>`, 'Hi') },
    ]);
    expect(samples[0]!.digest).toMatch(/^[0-9a-f]{16}$/);
    expect(samples[0]!.digest).not.toBe(samples[1]!.digest);
  });

  it('says a limit the work runs into once per part, naming the part, the limit and its flag', async () => {
    const small = new TemplateSandbox({ ...DEFAULT_RENDER_LIMITS, templateChars: 20 });
    try {
      const errors: Finding[] = [];
      const work = new TemplateWork(small, errors);
      const a = asset({ subject: 'Short', html: `<p>${'x'.repeat(20)}</p>` });
      expect([...(await checkTemplates(a, work))]).toEqual(['subject', 'text']);
      await checkTemplates(a, work);
      expect(errors).toEqual([
        {
          code: 'render_limit_exceeded',
          message: 'html of a-1 is longer than the template size limit (20 characters, --template-size-limit); the asset is not rendered',
          assetRef: 'a-1',
          language: 'cs',
          field: 'html',
        },
      ]);
    } finally {
      small.close();
    }
  });
});
