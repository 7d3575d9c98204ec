import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/errors.js';
import { parseItemsQuery, parseReportQuery } from '../src/model/query.js';

const today = new Date('2024-05-10T22:00:00Z');

function problems(fn: () => unknown): { parameter: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).problems;
  }
  throw new Error('expected a UsageError');
}

describe('4.12 and 4.13 parameters', () => {
  it('defaults /conversions to the 30 days ending today (UTC), limit 50, offset 0 and its sort', () => {
    expect(parseReportQuery({}, today)).toEqual({
      dateFrom: '2024-04-11',
      dateTo: '2024-05-10',
      limit: 50,
      offset: 0,
      sort: [
        { field: 'conversionsAmountWTax', descending: true },
        { field: 'name', descending: false },
      ],
    });
  });

  it('reads years 0001-0099 as written, and keeps a default end within the four-digit years', () => {
    expect(parseReportQuery({ dateFrom: '0050-02-01', dateTo: '0050-02-28' }, today).dateFrom).toBe('0050-02-01');
    expect(problems(() => parseReportQuery({ dateFrom: '0050-02-29', dateTo: '0050-03-01' }, today))[0]!.parameter).toBe('dateFrom');
    expect(parseReportQuery({ dateFrom: '9999-12-31' }, today)).toMatchObject({ dateFrom: '9999-12-31', dateTo: '9999-12-31' });
    expect(parseReportQuery({ dateTo: '0001-01-05' }, today)).toMatchObject({ dateFrom: '0001-01-01', dateTo: '0001-01-05' });
  });

  it('requires both dates on items and sorts them by -datetime', () => {
    expect(problems(() => parseItemsQuery({ dateTo: '2024-01-01' }))).toEqual([{ parameter: 'dateFrom', message: 'is required (YYYY-MM-DD)' }]);
    expect(parseItemsQuery({ dateFrom: '2024-01-01', dateTo: '2024-01-31' }).sort).toEqual([{ field: 'datetime', descending: true }]);
  });

  it('rejects malformed and impossible dates, and dateFrom after dateTo', () => {
    for (const bad of ['2024-1-01', '2024-02-30', '20240101', 'today', '2024-01-01T00:00:00Z']) {
      expect(problems(() => parseReportQuery({ dateFrom: bad, dateTo: '2024-12-31' }, today))[0]!.parameter).toBe('dateFrom');
    }
    expect(parseReportQuery({ dateFrom: '2024-02-29', dateTo: '2024-02-29' }, today).dateFrom).toBe('2024-02-29');
    expect(problems(() => parseItemsQuery({ dateFrom: '2024-02-02', dateTo: '2024-02-01' }))).toEqual([
      { parameter: 'dateFrom', message: '2024-02-02 is after dateTo 2024-02-01' },
    ]);
  });

  it('bounds limit to 1..1000 and offset to >= 0', () => {
    const base = { dateFrom: '2024-01-01', dateTo: '2024-01-31' };
    expect(parseItemsQuery({ ...base, limit: '1' }).limit).toBe(1);
    expect(parseItemsQuery({ ...base, limit: '1000', offset: '0' }).limit).toBe(1000);
    for (const limit of ['0', '1001', '-1', '1.5', 'ten']) {
      expect(problems(() => parseItemsQuery({ ...base, limit }))[0]!.parameter).toBe('limit');
    }
    expect(problems(() => parseItemsQuery({ ...base, offset: '-1' }))[0]!.parameter).toBe('offset');
  });

  it('takes any top-level scalar as a sort key and rejects the rest', () => {
    const base = { dateFrom: '2024-01-01', dateTo: '2024-01-31' };
    expect(parseReportQuery({ ...base, sort: 'uniqueContacts,-id' }, today).sort).toEqual([
      { field: 'uniqueContacts', descending: false },
      { field: 'id', descending: true },
    ]);
    for (const sort of ['source.name', 'breakdown', 'name;DROP TABLE x', '"name"']) {
      expect(problems(() => parseReportQuery({ ...base, sort }, today))[0]!.parameter).toBe('sort');
    }
    expect(problems(() => parseItemsQuery({ ...base, sort: 'datetime,orderId' }))[0]!.message).toMatch(/one field/);
    expect(problems(() => parseItemsQuery({ ...base, sort: 'conversionsAmountWTax' }))[0]!.parameter).toBe('sort');
  });

  it('splits comma lists, checks sourceType, and names every bad parameter at once', () => {
    const q = parseItemsQuery({ dateFrom: '2024-01-01', dateTo: '2024-01-31', country: 'CZ, SK,', sourceType: 'smartflow' });
    expect(q.country).toEqual(['CZ', 'SK']);
    expect(problems(() => parseItemsQuery({ dateFrom: 'x', dateTo: '2024-01-31', sourceType: 'sms', limit: '0', bogus: '1' })).map((p) => p.parameter)).toEqual([
      'bogus',
      'dateFrom',
      'limit',
      'sourceType',
    ]);
  });
});
