/** Issue 20: audience values that no contact has are findings naming the value. */
import { describe, expect, it } from 'vitest';
import { openLocalBackend } from '../src/local/open.js';
import type { ValidateResponse } from '../src/model/validation.js';
import { MAX_NAMED_VALUES, unknownAudienceFindings } from '../src/validation/audience.js';
import { csv, dataset, suiteThreadsOption } from './helpers.js';
import { keptValidations } from './kept-backends.js';

const HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
const dir = dataset({
  'contacts.csv': csv(HEADER, [
    ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'news;vip'],
    ['c2', 'b@x.dev', 'Bob', 'en', null, true, false, 'news'],
    ['c3', 'c@x.dev', 'Cy', null, 'SK', true, false, 'vip'],
  ]),
});
const HTML = '<p>Hi</p><a href="https://x.dev/unsubscribe">Unsubscribe</a>';

/** The dataset's validations, answered by one backend of it (kept-backends.ts). */
const validations = keptValidations();
async function validate(audience: Record<string, unknown>): Promise<ValidateResponse> {
  return validations(dir, { audience, assets: [{ subject: 'Hi', html: HTML, text: 't' }], options: { resolveOnly: true } });
}
const found = (r: ValidateResponse) => [...r.render.errors, ...r.render.warnings].filter((f) => f.code.startsWith('unknown_')).map((f) => [f.code, f.field, f.message]);

describe('audience values no contact has', () => {
  it('a mistyped list or exclude list is an error naming it and the nearest list', async () => {
    const r = await validate({ lists: ['news', 'vpi'], excludeLists: ['nwes'] });
    expect(r.audience.intended).toBe(2);
    expect(found(r)).toEqual([
      ['unknown_list', 'audience.lists', 'audience.lists: no contact is on list vpi, so it selects nobody; did you mean vip?'],
      ['unknown_list', 'audience.excludeLists', 'audience.excludeLists: no contact is on list nwes, so excluding it excludes nobody; did you mean news?'],
    ]);
  });

  it('languages and countries no contact has are errors, compared in any case; und is a contact without a language', async () => {
    const r = await validate({ lists: ['news', 'vip'], languages: ['CS', 'cz', 'und'], countries: ['cz', 'SK', 'XX'] });
    expect(found(r)).toEqual([
      ['unknown_language', 'audience.languages', 'audience.languages: no contact has language cz; did you mean cs?'],
      ['unknown_country', 'audience.countries', 'audience.countries: no contact has country XX'],
    ]);
    expect(r.render.errors.map((f) => f.code)).toEqual(['unknown_language', 'unknown_country']);
  });

  it('a contact id the dataset does not have is a warning', async () => {
    const r = await validate({ contactIds: ['c1', 'c9', 'c9'] });
    expect(r.render.errors).toEqual([]);
    expect(found(r)).toEqual([['unknown_contact', 'audience.contactIds', 'audience.contactIds: no contact c9 in the dataset; nobody gets the e-mail for it']]);
  });

  it('known values give no finding', async () => {
    const r = await validate({ lists: ['news'], excludeLists: ['vip'], contactIds: ['c3'], languages: ['en'], countries: ['cz'] });
    expect(found(r)).toEqual([]);
  });

  it('names at most a bound of values of one key, and counts the rest', () => {
    const ids = Array.from({ length: MAX_NAMED_VALUES + 5 }, (_, i) => `x${i}`);
    const { warnings } = unknownAudienceFindings({ missing: { contactIds: ids }, known: { lists: [], languages: [], countries: [] } });
    expect(warnings).toHaveLength(MAX_NAMED_VALUES + 1);
    expect(warnings.at(-1)).toEqual({ code: 'unknown_contact', field: 'audience.contactIds', count: 5, message: `audience.contactIds: 5 more values no contact has (${ids.length} in all)` });
  });
});

describe("the audience whatever the contacts file's own columns are named", () => {
  /** A validation of three contacts (c2 unsubscribed, c3 of an invalid address) with merge columns named as the audience's own values were. */
  async function validateWith(merge: Record<string, [string, string, string]>, audience: Record<string, unknown> = { lists: ['news'] }, html = HTML): Promise<ValidateResponse> {
    const names = Object.keys(merge);
    const rows = [
      ['c1', 'a@x.dev', 'Ann', 'cs', true, false, 'news'],
      ['c2', 'b@x.dev', 'Bob', 'cs', true, true, 'news'],
      ['c3', 'not-an-address', 'Cy', 'cs', true, false, 'news'],
    ].map((row, i) => [...row, ...names.map((n) => merge[n]![i]!)]);
    const dir = dataset({ 'contacts.csv': csv(['contact_id', 'email', 'first_name', 'language', 'consent', 'unsubscribed', 'lists', ...names], rows) });
    const backend = await openLocalBackend(dir, { ...suiteThreadsOption(), require: ['contacts'] });
    try {
      return await backend.validateEmail({ audience, assets: [{ subject: 'Hi', html, text: 't' }, { subject: 'Hello', html, text: 't', language: 'en' }] as never, options: { sampleSize: 5 } });
    } finally {
      await backend.close();
    }
  }

  it.each([
    ['suppression', ['', '', '']],
    ['suppression', ['x', 'y', 'z']],
    ['lang', ['en', 'en', 'en']],
    ['k', ['1', '2', '1']],
    ['k', ['X1', 'X2', 'X1']],
    ['duplicates', ['a', 'b', 'c']],
    ['sample_rank', ['9', '9', '9']],
  ] as const)('a column %s (%j) changes no count, no language and no sample', async (name, values) => {
    const r = await validateWith({ [name]: [...values] });
    expect(r.audience).toEqual({ intended: 3, suppressed: 2, deliverable: 1, suppressionBreakdown: { unsubscribed: 1, invalidEmail: 1, noConsent: 0 } });
    expect(r.languages.map((l) => [l.language, l.recipients])).toEqual([['cs', 1]]);
    expect(r.render.samples.map((s) => s.contactId)).toEqual(['c1']);
  });

  it("a merge column is the template's, by its own name: {{ contact.lang }} and {{ contact.suppression }} render the file's values", async () => {
    const html = `${HTML}<p>{{ contact.lang }}/{{ contact.suppression }}</p>`;
    const r = await validateWith({ lang: ['en', 'en', 'en'], suppression: ['gold', 'gold', 'gold'] }, { lists: ['news'] }, html);
    expect(r.render.errors).toEqual([]);
    expect(r.render.samples[0]!.htmlExcerpt).toContain('<p>en/gold</p>');
  });
});

describe('lists written with spaces around the separator', () => {
  it("'news; vip' is on news and on vip: selected by either, excluded by either, and no list is unknown", async () => {
    const dir = dataset({
      'contacts.csv': csv(HEADER, [
        ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'news; vip'],
        ['c2', 'b@x.dev', 'Bob', 'en', null, true, false, ' news '],
        ['c3', 'c@x.dev', 'Cy', null, 'SK', true, false, 'vip ;blocked'],
      ]),
    });
    const backend = await openLocalBackend(dir, { ...suiteThreadsOption(), require: ['contacts'] });
    try {
      const run = (audience: Record<string, unknown>) => backend.validateEmail({ audience, assets: [{ subject: 'Hi', html: HTML, text: 't' }], options: { resolveOnly: true } });
      expect((await run({ lists: ['vip'] })).audience.intended).toBe(2);
      expect((await run({ lists: ['news'] })).audience.intended).toBe(2);
      const excluded = await run({ lists: ['news', 'vip'], excludeLists: ['blocked'] });
      expect(excluded.audience.intended).toBe(2);
      expect(found(excluded)).toEqual([]);
      expect((await run({ lists: ['news'], excludeLists: ['vip'] })).audience.intended).toBe(1);
    } finally {
      await backend.close();
    }
  });
});
