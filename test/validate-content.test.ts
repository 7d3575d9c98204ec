/** The content checks of issue 20 (docs/validation.md, "Content checks"): each rule alone, then through `convx validate` with headers. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeRequest, type Finding } from '../src/model/validation.js';
import { htmlContentFindings, preheaderFindings, subjectFindings, withoutTags } from '../src/validation/content.js';
import { headerFindings } from '../src/validation/headers.js';
import { cli, SAMPLES, tempDir } from './helpers.js';

const at = { assetRef: 'inline:0', language: 'en' };
const codes = (findings: Finding[]) => findings.map((f) => f.code);
/** A document with lang and a color-scheme meta, so that only the rule under test speaks. */
const doc = (body: string) => `<html lang="en"><head><meta name="color-scheme" content="light dark"></head><body>${body}</body></html>`;
const html = (body: string) => htmlContentFindings(doc(body), at);
const TEXT = '<p>Our spring collection is here, with new colours and the sizes you asked for.</p>';

describe('subject', () => {
  it('subject_too_long: over 70 characters, Liquid tags not counted', () => {
    expect(subjectFindings('x'.repeat(70), at)).toEqual([]);
    expect(subjectFindings(`${'x'.repeat(60)}{{ contact.firstName | default: "a friend of ours" }}`, at)).toEqual([]);
    const [long] = subjectFindings('x'.repeat(71), at);
    expect(long).toMatchObject({ code: 'subject_too_long', count: 71, field: 'subject', assetRef: 'inline:0' });
  });

  it('subject_all_caps: five capitals or more and no lower-case letter', () => {
    expect(codes(subjectFindings('BIG SALE TODAY', at))).toEqual(['subject_all_caps']);
    expect(codes(subjectFindings('ÚŽASNÁ SLEVA {{ contact.firstName }}', at))).toEqual(['subject_all_caps']);
    expect(subjectFindings('Big SALE today', at)).toEqual([]);
    expect(subjectFindings('NEW: 20 %', at)).toEqual([]); // three capitals
    // the message quotes at most 80 characters of the subject
    const caps = subjectFindings('A'.repeat(5000), at).find((f) => f.code === 'subject_all_caps');
    expect(caps!.message).toContain(`("${'A'.repeat(80)}…")`);
    expect(caps!.message.length).toBeLessThan(200);
  });

  it('subject_exclamations: more than one "!"', () => {
    expect(subjectFindings('Hello!', at)).toEqual([]);
    expect(subjectFindings('Sale!!', at)).toEqual([expect.objectContaining({ code: 'subject_exclamations', count: 2 })]);
    expect(codes(subjectFindings('Now! Today!', at))).toEqual(['subject_exclamations']);
  });
});

describe('preheader', () => {
  it('missing_preheader is information; preheader_too_long a warning over 150 characters', () => {
    expect(preheaderFindings(undefined, at)).toEqual({ warnings: [], information: [expect.objectContaining({ code: 'missing_preheader', field: 'preheader' })] });
    expect(codes(preheaderFindings('{{ promo }}', at).information)).toEqual(['missing_preheader']);
    expect(preheaderFindings('New in this week', at)).toEqual({ warnings: [], information: [] });
    expect(preheaderFindings('y'.repeat(150), at).warnings).toEqual([]);
    expect(preheaderFindings('y'.repeat(151), at).warnings).toEqual([expect.objectContaining({ code: 'preheader_too_long', count: 151 })]);
  });
});

describe('HTML rules', () => {
  it('a document with lang, color-scheme, text and no tables says nothing', () => {
    expect(html(TEXT)).toEqual({ warnings: [], information: [] });
  });

  it('link_domain_mismatch: a link whose text is another domain than its href, with the line', () => {
    const found = html(`${TEXT}\n<a href="https://evil.example.net/login">www.mybank.com</a>\n<a href="https://shop.convx.dev/x">convx.dev</a> <a href="https://convx.dev">https://www.convx.dev/sale</a> <a href="https://a.dev">Read more at a.dev</a>`);
    expect(found.warnings).toEqual([expect.objectContaining({ code: 'link_domain_mismatch', count: 1, line: 2 })]);
    expect(found.warnings[0]!.message).toContain('"www.mybank.com" goes to https://evil.example.net/login (line 2)');
    expect(html(`${TEXT}<a href="{{ link }}">mybank.com</a>`).warnings).toEqual([]); // filled in per recipient
  });

  it('url_shortener: links through a public shortener', () => {
    const found = html(`${TEXT}<a href="https://bit.ly/3xyz">Shop</a><a href="https://www.tinyurl.com/a">Shop</a><a href="https://bitly.company.dev">Shop</a>`);
    expect(found.warnings).toEqual([expect.objectContaining({ code: 'url_shortener', count: 2 })]);
  });

  it('image_only_body and low_text_ratio', () => {
    expect(codes(html('<img src="a.png" alt="Sale"><a href="https://a.dev">Shop now</a>').warnings)).toEqual(['image_only_body']);
    expect(codes(html(`<img src="a.png" alt=""><img src="b.png" alt=""><p>${'w'.repeat(150)}</p>`).warnings)).toEqual(['low_text_ratio']);
    expect(html(`<img src="a.png" alt=""><img src="b.png" alt=""><p>${'w'.repeat(200)}</p>`).warnings).toEqual([]);
    expect(html(`<img src="a.png" alt="">${TEXT}`).warnings).toEqual([]);
    // Text of <style>, <title> and Liquid tags is not text a reader sees.
    expect(codes(html('<style>p { color: red; margin: 0 auto; padding: 10px }</style><img src="a.png" alt="">{{ contact.firstName }}').warnings)).toEqual(['image_only_body']);
  });

  it('missing_html_lang: an <html> without lang; a fragment is not judged', () => {
    const found = htmlContentFindings(`<!doctype html>\n<html>\n<head><meta name="color-scheme" content="light"></head><body>${TEXT}</body></html>`, at);
    expect(found.warnings).toEqual([expect.objectContaining({ code: 'missing_html_lang', line: 2, field: 'html' })]);
    expect(htmlContentFindings(`<html lang=" "><body>${TEXT}</body></html>`, at).warnings.map((f) => f.code)).toEqual(['missing_html_lang']);
    expect(htmlContentFindings(TEXT, at)).toEqual({ warnings: [], information: [] });
  });

  it('layout_table_role: tables without role="presentation" that have no <th> or <caption>', () => {
    const found = html(`${TEXT}\n<table><tr><td>layout<table role="presentation"><tr><td>ok</td></tr></table></td></tr></table>\n<table><tr><th>Item</th></tr></table><table role="none"></table>`);
    expect(found.warnings).toEqual([expect.objectContaining({ code: 'layout_table_role', count: 1, line: 2 })]);
  });

  it('heading_order: a heading more than one level below the one before', () => {
    expect(html(`${TEXT}<h1>a</h1><h2>b</h2><h3>c</h3><h2>d</h2><h1>e</h1><h2>f</h2>`).warnings).toEqual([]);
    const found = html(`${TEXT}<h1>a</h1>\n<h3>b</h3><h2>c</h2><h4>d</h4>`);
    expect(found.warnings).toEqual([expect.objectContaining({ code: 'heading_order', count: 2, line: 2 })]);
    expect(found.warnings[0]!.message).toContain('h1 then h3 (line 2), h2 then h4 (line 2)');
  });

  it('missing_color_scheme_meta: information about a document without the meta', () => {
    const found = htmlContentFindings(`<html lang="en"><head><title>x</title></head><body>${TEXT}</body></html>`, at);
    expect(found).toEqual({ warnings: [], information: [expect.objectContaining({ code: 'missing_color_scheme_meta', line: 1 })] });
    expect(htmlContentFindings(`<html lang="en"><head><meta name="supported-color-schemes" content="light"></head><body>${TEXT}</body></html>`, at).information).toEqual([]);
  });

  it('stays linear on hostile input', () => {
    const started = performance.now();
    withoutTags('{{'.repeat(200_000));
    htmlContentFindings(`<html lang="en"><body>${'<a href="https://a.dev">a.a.a.a.a.a.a.a.a.a.a.a</a>'.repeat(5_000)}${'<h1>x</h1><h3>y</h3>'.repeat(5_000)}</body></html>`, at);
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});

describe('headers: List-Unsubscribe', () => {
  const ONE_CLICK = { 'List-Unsubscribe': '<https://shop.convx.dev/u/{{ contact.contactId }}>, <mailto:u@convx.dev>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };

  it('judged only when the request gives headers', () => {
    expect(headerFindings(undefined)).toEqual([]);
    expect(headerFindings(ONE_CLICK)).toEqual([]);
    expect(headerFindings({ 'list-unsubscribe': ONE_CLICK['List-Unsubscribe'], 'LIST-UNSUBSCRIBE-POST': 'List-Unsubscribe=One-Click' })).toEqual([]);
  });

  it.each([
    [{}, 'missing_list_unsubscribe', 'headers.List-Unsubscribe'],
    [{ 'List-Unsubscribe': 'https://shop.convx.dev/u' }, 'invalid_list_unsubscribe', 'headers.List-Unsubscribe'],
    [{ 'List-Unsubscribe': '<mailto:u@convx.dev>' }, 'missing_list_unsubscribe_post', 'headers.List-Unsubscribe'],
    [{ 'List-Unsubscribe': '<https://shop.convx.dev/u>' }, 'missing_list_unsubscribe_post', 'headers.List-Unsubscribe-Post'],
    [{ 'List-Unsubscribe': '<https://shop.convx.dev/u>', 'List-Unsubscribe-Post': 'yes' }, 'missing_list_unsubscribe_post', 'headers.List-Unsubscribe-Post'],
  ])('%j: %s', (headers, code, field) => {
    expect(headerFindings(headers)).toEqual([expect.objectContaining({ code, field })]);
  });

  it('the request shape: headers is an object of strings', () => {
    const base = { audience: { lists: ['l'] }, assets: [{ html: '<p>x</p>' }] };
    expect(normalizeRequest({ ...base, headers: ONE_CLICK }).request?.headers).toEqual(ONE_CLICK);
    expect(normalizeRequest(base).request).not.toHaveProperty('headers');
    expect(normalizeRequest({ ...base, headers: { 'List-Unsubscribe': 1 } }).problems).toEqual([expect.objectContaining({ field: 'headers' })]);
    expect(normalizeRequest({ ...base, headers: { 'Bad Name': 'x' } }).problems).toEqual([expect.objectContaining({ field: 'headers' })]);
    expect(normalizeRequest({ ...base, headers: ['x'] }).problems).toEqual([expect.objectContaining({ field: 'headers' })]);
  });

  it('convx validate: a request with headers and no List-Unsubscribe-Post warns, and fails with --max-warnings 0', async () => {
    const dir = tempDir();
    const file = join(dir, 'request.json');
    const body = JSON.parse(JSON.stringify({ audience: { lists: ['l-1'], languages: ['en'] }, assets: [{ assetId: 'welcome-en' }] }));
    writeFileSync(file, JSON.stringify({ ...body, headers: { 'List-Unsubscribe': '<https://shop.convx.dev/u>' } }));
    const run = await cli(['validate', file, '--data', SAMPLES, '-o', 'json', '--max-warnings', '0']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).render.warnings).toEqual([expect.objectContaining({ code: 'missing_list_unsubscribe_post', field: 'headers.List-Unsubscribe-Post' })]);
    writeFileSync(file, JSON.stringify({ ...body, headers: ONE_CLICK }));
    expect((await cli(['validate', file, '--data', SAMPLES, '-o', 'json', '--max-warnings', '0'])).code).toBe(0);
  });
});
