/**
 * Issue 20, points 5 and 6: `convx validate -o sarif` (SARIF 2.1.0, validated against the OASIS
 * schema vendored in test/fixtures/sarif-schema-2.1.0.json: there is no network in the tests) and
 * `-o html`, the preview page, as text: its bytes, its escaping and the remote images it blocks.
 * The page in a browser is test/validate-html.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { compareWithBaseline } from '../src/model/baseline.js';
import { CHECKS, type ValidateResponse } from '../src/model/validation.js';
import { BLOCKED_IMAGE, blockRemoteImages, replaceCssUrls, replaceStartTags, validationHtml } from '../src/output/validation-html.js';
import { BASELINE_RULES, sarifLog } from '../src/output/sarif.js';
import { junitWithBaseline } from '../src/output/baseline.js';
import { junitReport } from '../src/output/validation.js';
import { cli, csv, dataset, onTerminal, tempDir } from './helpers.js';
import { textWidth } from '../src/output/terminal.js';

/** The SARIF 2.1.0 schema (draft-04: its "id" becomes ajv's "$id"), with its formats checked. */
function sarifSchema(): ValidateFunction {
  const { id, $schema: _draft, ...schema } = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'sarif-schema-2.1.0.json'), 'utf8')) as Record<string, unknown>;
  const ajv = new Ajv({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: its function is the module (and its default)
  const addFormats = ((formats as unknown as { default?: unknown }).default ?? formats) as unknown as (ajv: Ajv) => void;
  addFormats(ajv);
  return ajv.compile({ $id: id as string, ...schema });
}

const validSarif = sarifSchema();
const expectValidSarif = (text: string) => {
  const ok = validSarif(JSON.parse(text));
  expect(validSarif.errors ?? [], JSON.stringify(validSarif.errors?.slice(0, 3))).toEqual([]);
  expect(ok).toBe(true);
};

const RESPONSE: ValidateResponse = {
  channel: 'email',
  audience: { intended: 12, suppressed: 2, deliverable: 10, suppressionBreakdown: { unsubscribed: 1, invalidEmail: 1, noConsent: 0 } },
  languages: [{ language: 'cs', recipients: 10, assetRef: 'welcome-cs' }],
  render: {
    samples: [{ language: 'cs', contactId: 'c1', subject: 'Ahoj <Ann>', htmlExcerpt: '<p>Ahoj</p>', html: '<html><body style="background:#f0c"><p>Ahoj</p><img src="https://cdn.example/a.png" alt="A"></body></html>' }],
    warnings: [{ code: 'image_missing_alt', message: '1 image without alt text', assetRef: 'welcome-cs', language: 'cs', field: 'html', file: 'templates/welcome cs.html', line: 7 }],
    errors: [{ code: 'template_syntax', message: 'subject line 1: bad tag', assetRef: 'inline:0', field: 'subject', line: 1 }],
  },
};

describe('-o sarif', () => {
  it('is a valid SARIF 2.1.0 log: a rule per check code, results with level, message and location', () => {
    const text = sarifLog(RESPONSE, 'deliveries/welcome.json', '0.1.0');
    expectValidSarif(text);
    const log = JSON.parse(text);
    const run = log.runs[0];
    expect(log.version).toBe('2.1.0');
    expect(run.tool.driver.name).toBe('convx');
    expect(run.tool.driver.rules.map((r: { id: string }) => r.id)).toEqual([...CHECKS.errors, ...CHECKS.warnings, ...CHECKS.information, ...Object.keys(BASELINE_RULES)]);
    const [error, warning] = run.results;
    // a finding without a file: the request file, no line (the line is one of an inline template)
    expect(error).toMatchObject({ ruleId: 'template_syntax', ruleIndex: CHECKS.errors.indexOf('template_syntax'), level: 'error', message: { text: 'subject line 1: bad tag' } });
    expect(error.locations).toEqual([{ physicalLocation: { artifactLocation: { uri: 'deliveries/welcome.json', uriBaseId: '%SRCROOT%' } } }]);
    // a finding in a template file: that file and line
    expect(warning).toMatchObject({ ruleId: 'image_missing_alt', level: 'warning' });
    expect(warning.locations).toEqual([{ physicalLocation: { artifactLocation: { uri: 'templates/welcome%20cs.html', uriBaseId: '%SRCROOT%' }, region: { startLine: 7 } } }]);
    expect(warning.properties).toEqual({ assetRef: 'welcome-cs', language: 'cs', field: 'html' });
    expect(sarifLog(RESPONSE, 'deliveries/welcome.json', '0.1.0')).toBe(text); // the same bytes
  });

  it("a file's uri gives back its path: each segment percent-encoded (#, ?, %, a colon), an absolute path a file: URI", () => {
    const names = ['h/a b,c:d%e#f?.json', 'x:y.json', './x:y.json', 'dir/x:y/[1]&=+;@$.json', 'd/é ü.json', '../up/a#b.json', '/abs/a b#c?d%e:f.json'];
    for (const file of names) {
      const log = JSON.parse(sarifLog({ ...RESPONSE, render: { ...RESPONSE.render, warnings: [], errors: [{ code: 'template_syntax', message: 'bad', file, line: 1 }] } }, undefined, '1.0.0')) as {
        runs: { results: { locations: { physicalLocation: { artifactLocation: { uri: string; uriBaseId?: string } } }[] }[] }[];
      };
      const { uri, uriBaseId } = log.runs[0]!.results[0]!.locations[0]!.physicalLocation.artifactLocation;
      const url = new URL(uri, 'file:///root/');
      expect(url.protocol, uri).toBe('file:');
      expect([url.search, url.hash], uri).toEqual(['', '']);
      const expected = file.startsWith('/') ? file : `/root/${file.replace(/^\.\//, '')}`.replace(/\/root\/\.\.\//, '/');
      expect(decodeURIComponent(url.pathname), uri).toBe(expected);
      expect(uriBaseId, uri).toBe(file.startsWith('/') ? undefined : '%SRCROOT%');
    }
  });

  it('the schema check can fail: a result with an unknown level is refused', () => {
    const log = JSON.parse(sarifLog(RESPONSE, undefined, '0.1.0'));
    log.runs[0].results[0].level = 'fatal';
    expect(validSarif(log)).toBe(false);
    expect(log.runs[0].results[0].locations).toBeUndefined(); // stdin: no file to point at
  });

  it('with a baseline: each result new or unchanged, and the audience and sample changes as results of their own', () => {
    const before: ValidateResponse = { ...RESPONSE, audience: { ...RESPONSE.audience, deliverable: 20 }, render: { ...RESPONSE.render, warnings: [], samples: [{ ...RESPONSE.render.samples[0]!, subject: 'Ahoj' }, { ...RESPONSE.render.samples[0]!, contactId: 'c2' }] } };
    const comparison = compareWithBaseline(before, RESPONSE, 'base.json', { maxAudienceDrift: 0.1 });
    const text = sarifLog(RESPONSE, 'r.json', '0.1.0', comparison);
    expectValidSarif(text);
    const results = JSON.parse(text).runs[0].results as { ruleId: string; level: string; baselineState: string }[];
    expect(results.map((r) => [r.ruleId, r.level, r.baselineState])).toEqual([
      ['template_syntax', 'error', 'unchanged'],
      ['image_missing_alt', 'warning', 'new'],
      ['baseline_audience_drift', 'error', 'updated'],
      ['baseline_sample_changed', 'note', 'updated'],
      ['baseline_sample_changed', 'note', 'absent'],
    ]);
  });

  it('convx validate -o sarif names the request file and exits as the validation does', async () => {
    const dir = tempDir();
    const data = dataset({ 'contacts.csv': csv(['contact_id', 'email', 'language', 'consent', 'unsubscribed', 'lists'], [['c1', 'a@x.dev', 'cs', true, false, 'l']]) });
    writeFileSync(join(dir, 'r.json'), JSON.stringify({ audience: { lists: ['l'] }, assets: [{ subject: 'Hi', html: '<p>Hi <a href="http://x.dev">x</a></p>' }] }));
    const r = await cli(['validate', 'r.json', '--data', data, '-o', 'sarif', '--max-warnings', '0'], { cwd: dir });
    expect(r.code).toBe(1);
    expectValidSarif(r.stdout);
    const results = JSON.parse(r.stdout).runs[0].results as { ruleId: string; locations: unknown[] }[];
    expect(results.map((x) => x.ruleId)).toEqual(['language_fallback', 'missing_text_part', 'missing_unsubscribe_link', 'insecure_link', 'missing_preheader']);
    // The inline asset's finding is at its line of the request file (issue 20's locations).
    expect(results[0]!.locations).toEqual([{ physicalLocation: { artifactLocation: { uri: 'r.json', uriBaseId: '%SRCROOT%' }, region: { startLine: 1 } } }]);
  });
});

/** XML 1.0's Char production (https://www.w3.org/TR/xml/#charsets), every character of a document. */
const XML_CHARS = /^[\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u;

/** The text of an XML document's elements and attribute values, as an XML parser (htmlparser2 in xmlMode) reads them. */
async function xmlText(document: string): Promise<string> {
  const { Parser } = await import('htmlparser2');
  let text = '';
  const parser = new Parser({ ontext: (t) => (text += t), onattribute: (_name, value) => (text += value) }, { xmlMode: true, decodeEntities: true });
  parser.end(document);
  return text;
}

describe('the summary on a terminal', () => {
  it("fits the terminal's width: a sample's subject and excerpt cut, a finding's line wrapped under its message; whole in a pipe", async () => {
    const request = join(import.meta.dirname, '..', 'samples', 'deliveries', 'welcome-all-languages.json');
    const argv = ['validate', request, '--data', join(import.meta.dirname, '..', 'samples', 'shop'), '--no-color', '-o', 'table'];
    const piped = await cli(argv);
    expect(Math.max(...piped.stdout.split('\n').map(textWidth))).toBeGreaterThan(100);
    for (const columns of [100, 60]) {
      const shown = await onTerminal(argv, columns);
      expect(shown.code).toBe(piped.code);
      const lines = shown.stdout.split('\n');
      expect(Math.max(...lines.map(textWidth)), String(columns)).toBeLessThanOrEqual(columns);
      // the same words, laid out otherwise: nothing but the cut excerpts and subjects is lost
      const words = (text: string) => text.split(/\s+/).filter((w) => w && !w.endsWith('…'));
      const findings = (text: string) => text.slice(text.indexOf('\nWarnings'));
      expect(words(findings(shown.stdout))).toEqual(words(findings(piped.stdout)));
      expect(lines.filter((l) => /^ {4}\S/.test(l) && l.endsWith('…')).length).toBeGreaterThan(0);
    }
  });
});

describe('a run that cannot validate (its baseline or dataset missing), in the CI formats', () => {
  it('is an ::error annotation, a JUnit document of one errored case, a valid SARIF log whose invocation failed; exit 2 and the message on stderr as ever', async () => {
    const request = join(import.meta.dirname, '..', 'samples', 'deliveries', 'welcome.json');
    const shop = join(import.meta.dirname, '..', 'samples', 'shop');
    const dir = tempDir();
    const noBaseline = await cli(['validate', request, '--data', shop, '--baseline', 'missing.json', '-o', 'github'], { cwd: dir });
    expect([noBaseline.code, noBaseline.stdout]).toEqual([2, '::error title=convx::--baseline: not found: missing.json%0Ahint: write one with --update-baseline (or save the output of -o json)\n']);
    expect(noBaseline.stderr).toMatch(/^convx: error: --baseline: not found: missing\.json\n/);
    const junit = await cli(['validate', request, '--data', 'nope', '-o', 'junit'], { cwd: dir });
    expect(junit.code).toBe(2);
    expect(junit.stdout).toContain('<testcase classname="convx.validate" name="setup">\n      <error type="error" message="not found: nope">');
    const sarif = await cli(['validate', request, '--data', 'nope', '-o', 'sarif'], { cwd: dir });
    expect(sarif.code).toBe(2);
    expectValidSarif(sarif.stdout);
    expect(JSON.parse(sarif.stdout).runs[0].invocations).toEqual([{ executionSuccessful: false, toolExecutionNotifications: [{ level: 'error', message: { text: 'not found: nope\nhint: --data names a dataset directory or a .duckdb file written by `convx data import`' } }] }]);
  });
});

describe('-o junit', () => {
  it('is well-formed XML 1.0 whatever a value holds: U+FFFE and U+FFFF, controls left out, a lone surrogate as U+FFFD', async () => {
    const odd = 'BIG SALE \uffff \ufffe \u0001\u001b x \ud800 y \udc00 z \ud83d\ude00 <&">';
    const response: ValidateResponse = {
      ...RESPONSE,
      render: { ...RESPONSE.render, errors: [{ code: 'template_syntax', message: `subject: ${odd}`, assetRef: 'inline:0' }], warnings: [{ code: 'subject_all_caps', message: `the subject is all in capitals ("${odd}")` }] },
    };
    const report = junitReport(response, `request ${odd}.json`);
    const comparison = compareWithBaseline(RESPONSE, response, `base ${odd}.json`);
    for (const document of [report, junitWithBaseline(report, comparison)]) {
      expect(document).toMatch(XML_CHARS);
      const text = await xmlText(document);
      expect(text).toContain('BIG SALE    x \ufffd y \ufffd z \ud83d\ude00 <&">');
      expect(text).not.toMatch(/[\uffff\ufffe\u0001\u001b]/);
    }
  });

  it('convx validate -o junit of a subject holding U+FFFF (the subject_all_caps message) is well-formed', async () => {
    const dir = tempDir('convx-junit-');
    const data = dataset({ 'contacts.csv': csv(['contact_id', 'email', 'language', 'consent', 'unsubscribed', 'lists'], [['c1', 'a@x.dev', 'cs', true, false, 'l']]) });
    const html = '<html lang="cs"><body><p>Ahoj, novinky tento tyden pro vas.</p><a href="https://x.dev/unsubscribe">odhlasit</a></body></html>';
    writeFileSync(join(dir, 'r.json'), JSON.stringify({ audience: { lists: ['l'] }, assets: [{ language: 'cs', subject: 'BIG SALE \uffff', html, text: 'Ahoj', preheader: 'p' }] }));
    const run = await cli(['validate', 'r.json', '--data', data, '-o', 'junit'], { cwd: dir });
    expect(run.stdout).toContain('BIG SALE');
    expect(run.stdout).toMatch(XML_CHARS);
  });
});

describe('-o html, as text', () => {
  it('blocks and lists remote images, srcset, backgrounds and CSS urls; data: images stay', () => {
    const { html, blocked } = blockRemoteImages(
      `<img alt="a>b" src="https://cdn.example/a.png"><img src='data:image/png;base64,AA=='><td background=http://x.example/bg.gif style="background:url('https://x.example/c.png')"><img srcset="https://x.example/2x.png 2x" src=//x.example/d.png>`,
    );
    expect(blocked).toEqual(['https://cdn.example/a.png', 'http://x.example/bg.gif', 'https://x.example/2x.png 2x', '//x.example/d.png', 'https://x.example/c.png']);
    expect(html).toContain(`<img alt="a>b" src="${BLOCKED_IMAGE}" data-blocked-src="https://cdn.example/a.png">`);
    expect(html).toContain(`<img src='data:image/png;base64,AA=='>`);
    expect(html).not.toMatch(/\s(src|srcset|background)=["']?(https?:)?\/\//);
    expect(html).not.toContain('url(\'https');
  });

  it('finds the start tags and CSS urls the patterns they replace find, in time linear in the length (100,000 unclosed "<a" took 79 s)', () => {
    const START_TAG = /<([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
    const CSS_URL = /url\(\s*(['"]?)(?!data:)([^'")]*)\1\s*\)/gi;
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const text = (alphabet: string[]) => Array.from({ length: Math.floor(random() * 24) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    const tags = ['<', '>', '"', "'", 'a', 'B', '1', '-', ' ', '=', '\n', '/'];
    const urls = ['url(', 'URL(', '(', ')', '"', "'", ' ', '\t', '\u00a0', 'data:', 'DATA:', 'x', 'İ'];
    for (let i = 0; i < 4_000; i++) {
      const html = text(tags);
      expect(replaceStartTags(html, (name, attributes) => `[${name}|${attributes}]`), JSON.stringify(html)).toBe(html.replace(START_TAG, (_, name: string, attributes: string) => `[${name}|${attributes}]`));
      const css = text(urls);
      expect(replaceCssUrls(css, (address) => `{${address}}`), JSON.stringify(css)).toBe(css.replace(CSS_URL, (_, __, address: string) => `{${address}}`));
    }
    const began = performance.now();
    for (const hostile of ['<a'.repeat(100_000), 'url('.repeat(50_000), '<a "'.repeat(100_000), 'url("'.repeat(50_000)]) expect(blockRemoteImages(hostile).html).toBe(hostile);
    expect(performance.now() - began).toBeLessThan(2000);
  });

  it('holds the counts, the findings by severity with where they are, and each sample in a sandboxed frame, escaped; the same bytes each time', () => {
    const page = validationHtml(RESPONSE, { request: 'r.json', version: '0.1.0', failure: '1 error (template_syntax)' });
    expect(page).toBe(validationHtml(RESPONSE, { request: 'r.json', version: '0.1.0', failure: '1 error (template_syntax)' }));
    expect(page).toContain('<td class="num" data-field="deliverable" data-value="10">10</td>');
    expect(page).toContain('<section class="findings errors" data-severity="errors">\n<h2>Errors (1)</h2>');
    expect(page).toContain('<td>templates/welcome cs.html:7, welcome-cs, language cs, html</td>');
    expect(page).toContain('<span class="subject">Ahoj &lt;Ann&gt;</span>');
    expect(page).toContain('Not ready: 1 error (template_syntax)');
    const frame = /<iframe sandbox="" referrerpolicy="no-referrer" title="[^"]*" srcdoc="([^"]*)"><\/iframe>/.exec(page);
    expect(frame).not.toBeNull();
    expect(frame![1]).toContain('&lt;meta http-equiv=&quot;Content-Security-Policy&quot;');
    expect(frame![1]).toContain('data-blocked-src=&quot;https://cdn.example/a.png&quot;');
    expect(frame![1]).not.toContain(' src=&quot;https://'); // the address only as data-blocked-src
    expect(page).toContain('<li><code>https://cdn.example/a.png</code></li>');
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toContain('The HTML excerpt only');
    // a server that does not know options.preview sends no whole HTML: the excerpt, and the page says so
    const { html: _html, ...excerptOnly } = RESPONSE.render.samples[0]!;
    const older = validationHtml({ ...RESPONSE, render: { ...RESPONSE.render, samples: [excerptOnly] } }, { request: '<r>.json', version: '0.1.0' });
    expect(older).toContain('The HTML excerpt only');
    expect(older).toContain('srcdoc="&lt;!doctype html&gt;&lt;meta charset=&quot;utf-8&quot;&gt;');
    expect(older).toContain('<title>Delivery validation, &lt;r&gt;.json</title>');
    expect(older).toContain('data-verdict="ready"');
  });
});
