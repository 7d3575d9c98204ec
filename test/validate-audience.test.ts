/** Issue 20: audience values that no contact has are findings naming the value. */
import { describe, expect, it } from 'vitest';
import { openLocalBackend } from '../src/local/open.js';
import type { ValidateResponse } from '../src/model/validation.js';
import { MAX_NAMED_VALUES, unknownAudienceFindings } from '../src/validation/audience.js';
import { csv, dataset, suiteThreadsOption } from './helpers.js';

const HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
const dir = dataset({
  'contacts.csv': csv(HEADER, [
    ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'news;vip'],
    ['c2', 'b@x.dev', 'Bob', 'en', null, true, false, 'news'],
    ['c3', 'c@x.dev', 'Cy', null, 'SK', true, false, 'vip'],
  ]),
});
const HTML = '<p>Hi</p><a href="https://x.dev/unsubscribe">Unsubscribe</a>';

async function validate(audience: Record<string, unknown>): Promise<ValidateResponse> {
  const backend = await openLocalBackend(dir, { ...suiteThreadsOption(), require: ['contacts'] });
  try {
    return await backend.validateEmail({ audience, assets: [{ subject: 'Hi', html: HTML, text: 't' }], options: { resolveOnly: true } });
  } finally {
    await backend.close();
  }
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
