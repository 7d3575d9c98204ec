/** Mail-client support (docs/validation.md, "Mail-client support"): features found, the caniemail data, --clients and options.clients. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeRequest } from '../src/model/validation.js';
import { buildApp } from '../src/server/app.js';
import { createVerifier, signDevelopmentToken } from '../src/server/auth.js';
import { ServedDataset } from '../src/server/plugins.js';
import { clientFindings, DEFAULT_CLIENTS, selectClients, supportData } from '../src/validation/clients.js';
import { htmlFeatures, stylesheetSlugs } from '../src/validation/features.js';
import { cli, SAMPLES, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const at = { assetRef: 'inline:0', language: 'en' };
const slugs = (html: string) => [...htmlFeatures(html).keys()];
const sheet = (css: string) => {
  const found: [string, number][] = [];
  stylesheetSlugs(css, (slug, offset) => found.push([slug, offset]));
  return found;
};

describe('features of a template', () => {
  it('elements, attributes, links and image formats', () => {
    expect(slugs('<h2 align="center">x</h2><ul><li>a</li></ul><svg></svg><a href="#top">t</a><a href="mailto:a@b.dev">m</a><img src="https://x.dev/a.WEBP?v=1" srcset="a 2x"><img src="data:image/png;base64,AA">')).toEqual(
      expect.arrayContaining(['html-h1-h6', 'html-align', 'html-lists', 'html-svg', 'html-anchor-links', 'html-mailto-links', 'image-webp', 'html-srcset', 'image-base64']),
    );
    expect(slugs('<input type="checkbox"><button type="submit">x</button><section></section>')).toEqual(
      expect.arrayContaining(['html-input-checkbox', 'html-button-submit', 'html-semantics']),
    );
  });

  it('CSS of <style> and style attributes: properties, values, functions, units, selectors and at-rules, each at its line', () => {
    const html = [
      '<html><head><style>',
      '/* a comment with * and : */ .a > .b:hover { display: flex; gap: 4px }',
      '@media (prefers-color-scheme: dark) { .c { background: linear-gradient(red, blue) !important } }',
      '</style></head>',
      '<body><div style="margin-top: 1rem; border-top-left-radius: 4px; --brand: red; color: var(--brand)">x</div></body></html>',
    ].join('\n');
    const found = htmlFeatures(html);
    const lines = Object.fromEntries([...found].map(([slug, use]) => [slug, use.line]));
    expect(lines).toMatchObject({
      'css-display-flex': 2, 'css-gap': 2, 'css-pseudo-class-hover': 2, 'css-selector-child': 2,
      'css-at-media': 3, 'css-at-media-prefers-color-scheme': 3, 'css-linear-gradient': 3, 'css-important': 3,
      'css-margin': 5, 'css-unit-rem': 5, 'css-border-radius': 5, 'css-variables': 5,
    });
    expect(found.has('css-selector-universal')).toBe(false); // the "*" of the comment
    expect(found.get('css-variables')?.count).toBe(2);
  });

  it('a stylesheet is cut outside strings and comments', () => {
    expect(sheet('a { content: "{;}"; display: none }')).toEqual([['css-content', 4], ['css-display', 20], ['css-display-none', 20]]);
    expect(sheet('/* x */ @import url(a.css); @font-face { font-family: x }').map(([s]) => s)).toEqual(['css-comments', 'css-at-import', 'css-at-font-face', 'css-font-family']);
  });

  it('is linear on hostile input', () => {
    const started = performance.now();
    htmlFeatures(`<style>${'a'.repeat(300_000)}${'/*'.repeat(1)}</style><p style="${'b('.repeat(100_000)}">x</p>${'<div style="x:1px">'.repeat(20_000)}`);
    sheet(`${'/* */'.repeat(100_000)}${'"'}`);
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});

describe('clients', () => {
  it('the vendored data: every default glob names clients, and each client has a name', () => {
    const { clients, names, features } = supportData();
    expect(features.size).toBeGreaterThan(250);
    expect(clients).toContain('outlook.windows');
    expect(names.get('gmail.android')).toBe('Gmail Android');
    for (const glob of DEFAULT_CLIENTS) expect(selectClients([glob]).clients.length).toBeGreaterThan(0);
    expect(selectClients().clients).not.toContain('gmail.mobile-webmail');
  });

  it('globs select family.platform keys; one that selects none is invalid_request listing the valid clients', () => {
    expect(selectClients(['gmail.*', 'outlook.windows']).clients).toEqual(['gmail.android', 'gmail.desktop-webmail', 'gmail.ios', 'gmail.mobile-webmail', 'outlook.windows']);
    expect(selectClients(['*.ios']).clients).toContain('apple-mail.ios');
    const { clients, unknown } = selectClients(['gmail.*', 'lotus.notes']);
    expect(clients).toEqual([]);
    expect(unknown).toMatch(/^"lotus\.notes" matches no mail client; valid clients \(family\.platform, \* for any\): aol\.android, .*outlook\.windows/);
  });

  it('a finding per feature: unsupported as a warning, partial as information, naming the clients and the line', () => {
    const html = '<html lang="en">\n<body>\n<svg width="10"></svg>\n<p style="display: flex">x</p></body></html>';
    const found = clientFindings(html, ['outlook.windows', 'apple-mail.ios', 'gmail.android'], at);
    const svg = found.warnings.find((f) => f.message.includes('html-svg'));
    expect(svg).toMatchObject({ code: 'client_unsupported', line: 3, field: 'html', assetRef: 'inline:0', count: 1 });
    expect(svg!.message).toBe('Embedded <svg> image (html-svg), first on line 3: not supported by Outlook Windows, Gmail Android');
    expect(found.warnings.find((f) => f.message.includes('css-display-flex'))!.message).toContain('not supported by Outlook Windows');
    expect(found.information.find((f) => f.message.includes('css-display-flex'))).toMatchObject({ code: 'client_partial', line: 4 });
    // What an e-mail should have even where a client drops it is not judged: doctype, <body>, lang.
    expect(clientFindings('<!doctype html><html lang="en"><body><p>x</p></body></html>', ['outlook.windows', 'outlook.macos', 'yahoo.android'], at)).toEqual({ warnings: [], information: [] });
    expect(clientFindings(html, ['apple-mail.ios'], at).warnings).toEqual([]);
  });

  it('options.clients: an array of globs in the request', () => {
    const base = { audience: { lists: ['l'] }, assets: [{ html: '<p>x</p>' }] };
    expect(normalizeRequest({ ...base, options: { clients: [' gmail.* '] } }).request?.clients).toEqual(['gmail.*']);
    expect(normalizeRequest(base).request).not.toHaveProperty('clients');
    for (const clients of [[], 'gmail.*', ['gmail/*'], [1]]) {
      expect(normalizeRequest({ ...base, options: { clients } }).problems).toEqual([expect.objectContaining({ field: 'options.clients' })]);
    }
  });
});

/** samples/shop opened once (for validation) and lent to every command (kept-backends.ts): the tests are about --clients. */
const kept = keptBackends();

describe('convx validate --clients', () => {
  const request = (extra: Record<string, unknown> = {}) => {
    const file = join(tempDir(), 'request.json');
    const html = '<html lang="en"><head><meta name="color-scheme" content="light"></head><body><p>Hello there, a short note.</p><svg></svg><a href="https://x.dev/unsubscribe">Unsubscribe</a></body></html>';
    writeFileSync(file, JSON.stringify({ audience: { lists: ['l-1'], languages: ['en'] }, assets: [{ language: 'en', subject: 'Hi', preheader: 'News', text: 'Hi', html }], ...extra }));
    return file;
  };

  it('the flag fills options.clients; the default checks the most used clients', async () => {
    const file = request();
    const byDefault = JSON.parse((await kept(['validate', file, '--data', SAMPLES, '-o', 'json'])).stdout);
    expect(byDefault.render.warnings).toEqual([expect.objectContaining({ code: 'client_unsupported', line: 1, message: expect.stringContaining('html-svg') })]);
    const apple = await kept(['validate', file, '--data', SAMPLES, '-o', 'json', '--clients', 'apple-mail.ios', '--max-warnings', '0']);
    expect(apple.code).toBe(0);
    expect(JSON.parse(apple.stdout).render.warnings).toEqual([]);
    const gmail = JSON.parse((await kept(['validate', file, '--data', SAMPLES, '-o', 'json', '--clients', 'gmail.ios'])).stdout);
    expect(gmail.render.warnings[0].message).toMatch(/not supported by Gmail iOS$/);
    // The request's own options.clients, when no flag overrides it.
    const inRequest = JSON.parse((await kept(['validate', request({ options: { clients: ['apple-mail.*'] } }), '--data', SAMPLES, '-o', 'json'])).stdout);
    expect(inRequest.render.warnings).toEqual([]);
  });

  it("an unknown glob is exit 2 listing the valid clients: the flag's usage error (with -o github an annotation of the run, no file's); the request's option its invalid_request", async () => {
    const run = await kept(['validate', request(), '--data', SAMPLES, '-o', 'github', '--clients', 'gmail.*,notes.*']);
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/^::error title=convx::--clients: "notes\.\*" matches no mail client; valid clients/);
    expect(run.stderr).toMatch(/^convx: error: --clients: "notes\.\*" matches no mail client; valid clients \(family\.platform, \* for any\): aol\.android/);
    const option = await kept(['validate', request({ options: { clients: ['notes.*'] } }), '--data', SAMPLES, '-o', 'table']);
    expect(option.code).toBe(2);
    expect(option.stdout).toMatch(/options\.clients: "notes\.\*" matches no mail client/);
  });

  it('information is printed in every format and never fails the run', async () => {
    const file = request({ assets: [{ language: 'en', subject: 'Hi', text: 'Hi', html: '<p style="display:flex">A short note for you, with a link.</p><a href="https://x.dev/unsubscribe">Unsubscribe</a>' }] });
    const argv = ['validate', file, '--data', SAMPLES, '--max-warnings', '1'];
    const json = JSON.parse((await cli([...argv, '-o', 'json'])).stdout);
    expect(json.render.information.map((f: { code: string }) => f.code)).toEqual(['missing_preheader', 'client_partial', 'client_partial']);
    const table = await cli([...argv, '-o', 'table']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/Information \(3\)\n {2}missing_preheader {2}inline:0 has no preheader/);
    const github = (await cli([...argv, '-o', 'github'])).stdout;
    expect(github).toMatch(/^::notice file=[^,]+(,line=\d+)?,title=convx client_partial::display:flex \(css-display-flex\), first on line 1: partly supported by /m);
    const junit = (await cli([...argv, '-o', 'junit'])).stdout;
    expect(junit).toMatch(/<testcase classname="convx.validate.information" name="missing_preheader">\s*<system-out>information: inline:0 has no preheader/);
    expect(junit).toMatch(/<testcase classname="convx.validate.information" name="missing_color_scheme_meta"><\/testcase>/);
  });

  it('the README of the vendored data names its version, and the build copies it', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'src', 'validation', 'data', 'README.md'), 'utf8');
    const data = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'src', 'validation', 'data', 'caniemail.json'), 'utf8'));
    expect(readme).toContain(`last_update_date ${data.last_update_date.slice(0, 10)}`);
    expect(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).toContain('node scripts/copy-data.js');
  });
});

describe('the server', () => {
  it('honours options.clients of the request body (what API mode sends for --clients)', async () => {
    const served = await ServedDataset.load(SAMPLES);
    const app = await buildApp({ dataset: () => served, verify: createVerifier({ secret: 's' }), log: () => undefined, version: 'test' });
    const token = await signDevelopmentToken('s', 'shop', '1h');
    const post = async (options: Record<string, unknown>) => {
      const payload = { audience: { lists: ['l-1'], languages: ['en'] }, assets: [{ language: 'en', subject: 'Hi', text: 'Hi', html: '<p>Hello, a short note.</p><svg></svg>' }], options };
      const res = await app.inject({ method: 'POST', url: '/v4/delivery/e-mail/validate', headers: { authorization: `Bearer ${token}` }, payload });
      return JSON.parse(res.body).render;
    };
    try {
      expect((await post({ clients: ['gmail.ios'] })).warnings.find((f: { code: string }) => f.code === 'client_unsupported').message).toMatch(/not supported by Gmail iOS$/);
      expect((await post({ clients: ['apple-mail.ios'] })).warnings.map((f: { code: string }) => f.code)).not.toContain('client_unsupported');
      expect((await post({ clients: ['notes.*'] })).errors).toEqual([expect.objectContaining({ code: 'invalid_request', field: 'options.clients' })]);
    } finally {
      await app.close();
      await served.retire();
    }
  });
});
