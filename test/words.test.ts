/** The words more than one part of convx writes (src/words.ts). */
import { describe, expect, it } from 'vitest';
import { agree, plural, withCommas } from '../src/words.js';

describe('words', () => {
  it('withCommas writes a whole number as toLocaleString("en-US") does, at every grouping boundary and sign', () => {
    const values = [0, 7, 99, 999, 1000, 1001, 9999, 10_000, 99_999, 100_000, 999_999, 1_000_000, 1_234_567, 12_345_678, 2 ** 31, Number.MAX_SAFE_INTEGER];
    for (const n of [...values, ...values.slice(1).map((v) => -v)]) expect(withCommas(n), String(n)).toBe(n.toLocaleString('en-US'));
  });

  it('plural and agree pick the word by the count', () => {
    expect([plural(1, 'row'), plural(2, 'row'), plural(0, 'entry', 'entries')]).toEqual(['1 row', '2 rows', '0 entries']);
    expect([agree(1, 'has', 'have'), agree(3, 'has', 'have')]).toEqual(['has', 'have']);
  });
});
