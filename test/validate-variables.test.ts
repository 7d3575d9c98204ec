/** Issue 20: a contact field by its column name, unknown fields and variables, variables empty for everyone. */
import { describe, expect, it } from 'vitest';
import { openLocalBackend } from '../src/local/open.js';
import type { Finding, ValidateResponse } from '../src/model/validation.js';
import { cli, csv, dataset, suiteThreadsOption } from './helpers.js';
import { keptValidations } from './kept-backends.js';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

const HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists', 'nick'];
const dir = dataset({
  'contacts.csv': csv(HEADER, [
    ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'l', ''],
    ['c2', 'b@x.dev', 'Bob', 'cs', 'CZ', true, false, 'l', ''],
    ['c3', 'c@x.dev', null, 'cs', 'CZ', true, false, 'l', 'Cy'],
  ]),
});

const UNSUBSCRIBE = '<a href="https://x.dev/unsubscribe">Unsubscribe</a>';
/** The dataset's validations, answered by one backend of it (kept-backends.ts). */
const validations = keptValidations();
async function validate(html: string, variables: Record<string, unknown> = {}): Promise<ValidateResponse> {
  return validations(dir, { audience: { lists: ['l'] }, assets: [{ subject: 'Hi', html: `${html}${UNSUBSCRIBE}`, text: 't' }], variables, options: { sampleSize: 3 } });
}
const of = (findings: Finding[], code: string) => findings.filter((f) => f.code === code).map((f) => f.message);

describe('contact fields by their column name', () => {
  it('contact.first_name resolves as contact.firstName does: counted and rendered', async () => {
    const r = await validate('<p>{{ contact.first_name }}|{{ contact.firstName }}</p>');
    expect(r.render.errors).toEqual([]);
    expect(of(r.render.warnings, 'unresolved_variable')).toEqual([
      '{{ contact.first_name }} in html is empty for 1 deliverable recipient (contact field without a value; add one, or a default filter)',
      '{{ contact.firstName }} in html is empty for 1 deliverable recipient (contact field without a value; add one, or a default filter)',
    ]);
    const excerpts = r.render.samples.map((s) => s.htmlExcerpt);
    expect(excerpts.some((e) => e.includes('Ann|Ann'))).toBe(true);
    expect(excerpts.some((e) => e.includes('Bob|Bob'))).toBe(true);
  });
});

describe('unknown fields and variables are errors with the nearest names', () => {
  it('a misspelt field, a field nobody has, a misspelt variable', async () => {
    const r = await validate('{{ contact.frist_name }} {{ contact.firstNam }} {{ contact.nickname }} {{ promo_cod }} {{ shop.nmae }}', {
      promo_code: 'X',
      shop: { name: 'S' },
    });
    expect(of(r.render.errors, 'unknown_variable')).toEqual([
      '{{ contact.frist_name }} in html: the contacts have no field frist_name; did you mean first_name?',
      '{{ contact.firstNam }} in html: the contacts have no field firstNam; did you mean firstName?',
      '{{ contact.nickname }} in html: the contacts have no field nickname; did you mean nick?',
      "{{ promo_cod }} in html: the request's variables have no promo_cod; did you mean promo_code?",
      "{{ shop.nmae }} in html: the request's variables have no shop.nmae; did you mean name?",
    ]);
    expect(r.render.errors.every((f) => f.assetRef === 'inline:0' && f.field === 'html')).toBe(true);
    expect(of(r.render.warnings, 'unresolved_variable')).toEqual([]);
  });

  it('liquid\'s own size, first and last of a given list are no unknown variable', async () => {
    const r = await validate('{{ items.size }} {{ items.first }}', { items: ['a'] });
    expect(r.render.errors).toEqual([]);
  });
});

describe('a variable empty for every recipient is an error', () => {
  it('a request variable without a value and a field no recipient has', async () => {
    const r = await validate('{{ promo }} {{ contact.nick }}', { promo: '' });
    expect(r.render.errors.map((f) => [f.code, f.count, f.message])).toEqual([
      [
        'empty_variable',
        3,
        '{{ promo }} in html is empty for every deliverable recipient (3 recipients: the request gives it no value; give it one, or a default filter)',
      ],
    ]);
    // Cy has a nickname: empty for two of three is a warning.
    expect(r.render.warnings.filter((f) => f.code === 'unresolved_variable').map((f) => f.count)).toEqual([2]);
    const none = await validate('{{ contact.nick }}');
    expect(none.render.errors.map((f) => f.code)).toEqual([]);
  });

  it('a variable the template tests ({% if %}, {% unless %}) is only a warning, even empty for everyone', async () => {
    const r = await validate('{% if promo %}Code: {{ promo }}{% endif %} {% unless promo != blank %}no code{% endunless %}', { promo: '' });
    expect(r.render.errors).toEqual([]);
    expect(r.render.warnings.filter((f) => f.code === 'unresolved_variable').map((f) => f.count)).toEqual([3]);
    // tested elsewhere than where it is printed counts too: the part handles its absence
    const other = await validate('{% if promo == blank %}none{% endif %}{{ promo }}', { promo: '' });
    expect(other.render.errors).toEqual([]);
    // a test of another variable does not guard this one
    const unguarded = await validate('{% if promotion %}x{% endif %}{{ promo }}', { promo: '', promotion: 'yes' });
    expect(unguarded.render.errors.map((f) => f.code)).toEqual(['empty_variable']);
  });

  it('exits 1 from the CLI', async () => {
    const request = join(dir, 'request.json');
    writeFileSync(request, JSON.stringify({ audience: { lists: ['l'] }, assets: [{ subject: 'Hi {{ promo_cod }}', html: `x${UNSUBSCRIBE}`, text: 't' }], variables: { promo_code: 'X' } }));
    const run = await cli(['validate', request, '--data', dir, '-o', 'json']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('convx: not ready: 1 error (unknown_variable)\n');
  });
});

describe('variables read but not printed plainly', () => {
  it('a field or variable that exists nowhere is an unknown_variable in a default, a condition, a case, a loop and an assign', async () => {
    const cases: [string, string][] = [
      ['{{ contact.frist_name | default: "friend" }}', 'contact.frist_name in html: the contacts have no field frist_name; did you mean first_name?'],
      ['{% if contact.nik == "Cy" %}x{% endif %}', 'contact.nik in html: the contacts have no field nik; did you mean nick?'],
      ['{% unless contact.first_name and contact.nik %}x{% endunless %}', 'contact.nik in html: the contacts have no field nik; did you mean nick?'],
      ['{% case contact.nik %}{% when "Cy" %}x{% endcase %}', 'contact.nik in html: the contacts have no field nik; did you mean nick?'],
      ['{% for p in prods %}{{ p }}{% endfor %}', "prods in html: the request's variables have no prods; did you mean products?"],
      ['{% assign t = shop.nmae | upcase %}{{ t }}', "shop.nmae in html: the request's variables have no shop.nmae; did you mean name?"],
      ['{% for i in (1..limit) %}{{ i }}{% endfor %}', "limit in html: the request's variables have no limit"],
    ];
    for (const [template, message] of cases) {
      const r = await validate(template, { products: ['A'], shop: { name: 'S' } });
      expect(of(r.render.errors, 'unknown_variable'), template).toEqual([message]);
    }
  });

  it('what exists, literals, Liquid words and the names a template binds are no finding; a variable printed too is named once', async () => {
    const template = [
      '{{ contact.nick | default: "friend" }}',
      '{% if contact.nick != blank and products contains "A" or shop.name == empty %}x{% elsif true %}y{% endif %}',
      '{% case contact.country %}{% when "CZ", \'SK\' %}z{% endcase %}',
      '{% for p in products reversed limit: 2 %}{{ p }}{% if forloop.first %}f{% endif %}{% endfor %}',
      '{% for i in (1..products.size) %}{{ i }}{% endfor %}',
      '{% assign n = contact.first_name | default: "x" | upcase %}{% if n %}{{ n }}{% endif %}',
    ].join('');
    const r = await validate(template, { products: ['A'], shop: { name: 'S' } });
    expect(of(r.render.errors, 'unknown_variable')).toEqual([]);
    // printed and looped over: one finding, the printed one's
    const both = await validate('{% for p in prods %}{{ p }}{% endfor %}{{ prods.size }}');
    expect(of(both.render.errors, 'unknown_variable')).toEqual(["{{ prods.size }} in html: the request's variables have no prods"]);
  });
});

describe('a column with a digit after an underscore', () => {
  it('address_2 is contact.address2 as it renders, counted and not unknown', async () => {
    const withDigit = dataset({
      'contacts.csv': csv(['contact_id', 'email', 'first_name', 'language', 'consent', 'unsubscribed', 'lists', 'address_2'], [
        ['c1', 'a@x.dev', 'Ann', 'cs', true, false, 'l', 'Flat 3'],
        ['c2', 'b@x.dev', 'Bob', 'cs', true, false, 'l', ''],
      ]),
    });
    const backend = await openLocalBackend(withDigit, { ...suiteThreadsOption(), require: ['contacts'] });
    try {
      const html = `<p>{{ contact.address2 }}|{{ contact.address_2 }}</p>${UNSUBSCRIBE}`;
      const r = await backend.validateEmail({ audience: { lists: ['l'] }, assets: [{ subject: 'Hi', html, text: 't' }], options: { sampleSize: 2 } });
      expect(of(r.render.errors, 'unknown_variable')).toEqual([]);
      expect(of(r.render.warnings, 'unresolved_variable').map((m) => m.split(' ')[1])).toEqual(['contact.address2', 'contact.address_2']);
      expect(r.render.samples.some((s) => s.htmlExcerpt.includes('Flat 3|Flat 3'))).toBe(true);
    } finally {
      await backend.close();
    }
  });
});
