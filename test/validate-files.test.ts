/**
 * Issue 20: several request files or a glob in one run, one result per file in every format;
 * an unreadable request file still gives CI output; a JSON syntax error names line and column;
 * a flag's bad value is blamed on the flag; findings about an inline asset carry the request
 * file and line; --ignore and --fail-on per code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, jsonSyntaxError } from '../src/commands/request-json.js';
import { expandGlob } from '../src/commands/request-files.js';
import { cli, csv, dataset, SAMPLES, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const HEADER = ['contact_id', 'email', 'first_name', 'language', 'country', 'consent', 'unsubscribed', 'lists'];
const dir = dataset({
  'contacts.csv': csv(HEADER, [
    ['c1', 'a@x.dev', 'Ann', 'cs', 'CZ', true, false, 'l'],
    ['c2', 'b@x.dev', 'Bob', 'cs', 'CZ', true, false, 'l'],
  ]),
});
const UNSUBSCRIBE = '<a href="https://x.dev/unsubscribe">Unsubscribe</a>';
const GOOD = { audience: { lists: ['l'] }, assets: [{ language: 'cs', subject: 'Hi', html: `<p>Hi</p>${UNSUBSCRIBE}`, text: 't' }] };
/** A warning of each of two codes (http link, no text part) and no error. */
const WARNED = { audience: { lists: ['l'] }, assets: [{ language: 'cs', subject: 'Hi', html: `<a href="http://x.dev/a">a</a>${UNSUBSCRIBE}` }] };

const requests = join(dir, 'deliveries');
mkdirSync(join(requests, 'more'), { recursive: true });
const write = (name: string, body: unknown) => writeFileSync(join(requests, name), typeof body === 'string' ? body : JSON.stringify(body, null, 2));
write('a-good.json', GOOD);
write('b-warned.json', WARNED);
write('more/c-good.json', GOOD);
write('broken.txt', '{\n  "audience": { "lists": ["l"] },\n  "assets": [ { "assetId": "x" }, ]\n}\n');
/** The commands are lent one backend of the dataset (kept-backends.ts): the tests write request files, never data. */
const kept = keptBackends();
const run = (args: string[]) => kept(['validate', ...args, '--data', dir], { cwd: dir });

describe('several request files in one run', () => {
  it('a glob expands in convx, sorted, and one result per file comes out as a JSON array', async () => {
    expect(expandGlob('deliveries/*.json', dir)).toEqual(['deliveries/a-good.json', 'deliveries/b-warned.json']);
    expect(expandGlob('deliveries/**/*.json', dir)).toEqual(['deliveries/a-good.json', 'deliveries/b-warned.json', 'deliveries/more/c-good.json']);
    const r = await run(['deliveries/*.json', '-o', 'json']);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as { file: string; result: { channel: string } }[];
    expect(body.map((x) => [x.file, x.result.channel])).toEqual([
      ['deliveries/a-good.json', 'email'],
      ['deliveries/b-warned.json', 'email'],
    ]);
  });

  it('the exit code is the worst, stderr names the failing file, junit has a suite per file, github a notice per file', async () => {
    const args = ['deliveries/a-good.json', 'deliveries/b-warned.json', '--max-warnings', '0'];
    const junit = await run([...args, '-o', 'junit']);
    expect(junit.code).toBe(1);
    expect(junit.stderr).toBe('convx: not ready: deliveries/b-warned.json: 2 warnings, more than --max-warnings 0\n');
    expect([...junit.stdout.matchAll(/<testsuite name="([^"]+)"/g)].map((m) => m[1])).toEqual(['deliveries/a-good.json', 'deliveries/b-warned.json']);
    expect(junit.stdout.match(/<testsuites [^>]*>/)![0]).toMatch(/failures="2"/);
    const github = await run([...args, '-o', 'github']);
    expect(github.stdout.match(/^::notice title=convx validate::.*$/gm)).toEqual([
      '::notice title=convx validate::deliveries/a-good.json: 2 of 2 deliverable; 0 errors, 0 warnings',
      '::notice title=convx validate::deliveries/b-warned.json: 2 of 2 deliverable; 0 errors, 2 warnings',
    ]);
    const table = await run([...args, '-o', 'table']);
    expect(table.stdout).toMatch(/^== deliveries\/a-good.json\n/);
    expect(table.stdout).toMatch(/\n2 requests: 1 ready, 1 not ready\n$/);
  });

  it('-o sarif: one run with the results of every file, each in its own file; --baseline and -o html take one request', async () => {
    const r = await run(['deliveries/*.json', '-o', 'sarif']);
    const runs = JSON.parse(r.stdout).runs as { results: { ruleId: string; locations: { physicalLocation: { artifactLocation: { uri: string } } }[] }[] }[];
    expect(runs).toHaveLength(1);
    const files = new Set(runs[0]!.results.map((x) => x.locations[0]!.physicalLocation.artifactLocation.uri));
    expect(files).toEqual(new Set(['deliveries/a-good.json', 'deliveries/b-warned.json']));
    const html = await run(['deliveries/*.json', '-o', 'html']);
    expect([html.code, html.stderr]).toEqual([2, 'convx: error: -o html previews one request: name one request file (a page per file: run once for each)\n']);
    const baseline = await run(['deliveries/*.json', '--baseline', 'b.json']);
    expect([baseline.code, baseline.stderr]).toEqual([2, 'convx: error: --baseline compares one request with its earlier result: name one request file\n']);
    // `--update-baseline FILE` (a switch, FILE read as a second request): the hint says where the file goes
    const update = await run(['deliveries/a-good.json', '--update-baseline', 'b.json']);
    expect([update.code, update.stderr]).toEqual([
      2,
      'convx: error: --baseline compares one request with its earlier result: name one request file\nhint: --update-baseline takes no file: it writes the one --baseline names (--baseline FILE --update-baseline)\n',
    ]);
  });

  it('a file whose name has glob characters is that file', async () => {
    mkdirSync(join(dir, 'odd'), { recursive: true });
    writeFileSync(join(dir, 'odd', '[draft].json'), JSON.stringify(GOOD));
    const r = await run(['odd/[draft].json', '-o', 'json']);
    expect([r.code, JSON.parse(r.stdout).channel]).toEqual([0, 'email']);
  });

  it('a glob that matches nothing is a usage error', async () => {
    const r = await run(['deliveries/*.yaml']);
    expect([r.code, r.stderr]).toEqual([2, 'convx: error: no request file matches deliveries/*.yaml\n']);
  });
});

describe('a request that cannot be read', () => {
  it('a JSON syntax error names its line and column', async () => {
    expect(jsonSyntaxError('{\n  "a": }')).toEqual({ message: 'unexpected "}"', line: 2, column: 8 });
    expect(jsonSyntaxError('{"a": "x')).toEqual({ message: 'a string that is never closed', line: 1, column: 7 });
    const r = await run(['deliveries/broken.txt', '-o', 'json']);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toBe('convx: error: deliveries/broken.txt is not JSON: line 3, column 35: unexpected "]"\n');
  });

  it('-o github gives an annotation at the line, -o junit a failing test case; exit 2', async () => {
    const github = await run(['deliveries/broken.txt', '-o', 'github']);
    expect(github.code).toBe(2);
    expect(github.stdout).toMatch(/^::error file=deliveries\/broken\.txt,line=3,title=convx invalid_request::deliveries\/broken\.txt is not JSON: line 3, column 35/);
    const junit = await run(['deliveries/missing.json', '-o', 'junit']);
    expect(junit.code).toBe(2);
    expect(junit.stdout).toContain('<failure type="error" message="not found: deliveries/missing.json">');
    expect(junit.stderr).toMatch(/^convx: error: not found: deliveries\/missing.json\n/);
    // the request's other checks did not run: skipped, not passed
    const tests = Number(/<testsuite [^>]*tests="(\d+)"/.exec(junit.stdout)![1]);
    expect(junit.stdout).toMatch(new RegExp(`<testsuite [^>]*tests="${tests}" failures="1" errors="0" skipped="${tests - 1}"`));
    expect(junit.stdout).toContain('<testcase classname="convx.validate.errors" name="asset_not_found">\n      <skipped message="not checked: the request is not valid"/>');
  });

  it('a byte order mark in front (as Notepad saves) is no part of the JSON: the file reads as it does without one, from a file or stdin', async () => {
    const text = JSON.stringify(WARNED, null, 2);
    write('bom.json', `\uFEFF${text}`);
    write('plain.json', text);
    const [bom, plain] = [await run(['deliveries/bom.json', '-o', 'json']), await run(['deliveries/plain.json', '-o', 'json'])];
    expect(plain.code).toBe(0);
    expect([bom.code, bom.stdout.replaceAll('bom.json', 'plain.json'), bom.stderr]).toEqual([plain.code, plain.stdout, plain.stderr]);
    const piped = (stdin: string) => cli(['validate', '-', '--data', dir, '-o', 'json'], { stdin });
    const [bomPiped, plainPiped] = [await piped(`\uFEFF${text}`), await piped(text)];
    expect([bomPiped.code, bomPiped.stdout]).toEqual([0, plainPiped.stdout]);
  });

  it('beside readable ones, each file has its result and the run exits 2', async () => {
    const r = await run(['deliveries/a-good.json', 'deliveries/broken.txt', '-o', 'json']);
    expect(r.code).toBe(2);
    expect((JSON.parse(r.stdout) as { result: { render: { errors: { code: string }[] } } }[]).map((x) => x.result.render.errors.map((f) => f.code))).toEqual([[], ['invalid_request']]);
    expect(r.stderr).toMatch(/^convx: error: deliveries\/broken\.txt is not JSON: line 3/);
  });
});

describe('flags are blamed on themselves', () => {
  it('--sample-size out of range is the flag\'s usage error, not a finding about the request file', async () => {
    const r = await run(['deliveries/a-good.json', '--sample-size', '50', '-o', 'github']);
    expect([r.code, r.stdout, r.stderr]).toEqual([2, '', 'convx: error: --sample-size: 50 is out of range: a whole number from 1 to 20\n']);
  });
});

describe('findings point into the request file', () => {
  it('the line of each JSON value, and an inline asset\'s findings at its part', async () => {
    const lines = jsonLines('{\n  "assets": [\n    {\n      "html": "x"\n    }\n  ],\n  "audience": {"lists": ["a"]}\n}');
    expect([lines.get('assets'), lines.get('assets[0]'), lines.get('assets[0].html'), lines.get('audience.lists')]).toEqual([2, 3, 4, 7]);
    // in time and memory linear in the file: a line's number is not looked for from each value again (a 1.2 MB line of
    // 300,000 arrays took 10.5 s), and only values six steps deep and an array's first 1,000 elements are kept
    const wide = `{"assets":[{"subject":"s",\n"variables":{"x":[${Array.from({ length: 300_000 }, () => '[0]').join(',')}],"y":${'['.repeat(400)}1${']'.repeat(400)}}}]}`;
    const began = performance.now();
    const kept = jsonLines(wide);
    expect(performance.now() - began).toBeLessThan(2000);
    expect([kept.get('assets[0].subject'), kept.get('assets[0].variables'), kept.get('assets[0].variables.x[999]'), kept.get('assets[0].variables.y[0]')]).toEqual([1, 2, 2, 2]);
    expect([kept.has('assets[0].variables.x[1000]'), kept.has('assets[0].variables.y[0][0]'), kept.has('assets[0].variables.y[0][0][0]')]).toEqual([false, true, false]);
    expect(kept.size).toBeLessThan(2100);
    const r = await run(['deliveries/b-warned.json', '-o', 'json']);
    const warnings = (JSON.parse(r.stdout) as { render: { warnings: { code: string; file?: string; line?: number }[] } }).render.warnings;
    expect(warnings.map((f) => [f.code, f.file, f.line])).toEqual([
      ['missing_text_part', 'deliveries/b-warned.json', 8],
      ['insecure_link', 'deliveries/b-warned.json', 11],
    ]);
  });

  it("a stored asset's findings at the request's reference to it", async () => {
    const file = join(tempDir(), 'stored.json');
    writeFileSync(file, JSON.stringify({ audience: { lists: ['l-1'] }, assets: [{ assetId: 'welcome-cs' }, { assetId: 'welcome-en' }] }, null, 2));
    const r = await cli(['validate', file, '--data', SAMPLES, '-o', 'json']);
    const { information } = (JSON.parse(r.stdout) as { render: { information: { assetRef?: string; file?: string; line?: number }[] } }).render;
    const at = new Set(information.filter((f) => f.assetRef !== undefined).map((f) => `${f.assetRef} ${f.file} ${f.line}`));
    // "assetId": "welcome-cs" is on line 9 of the pretty-printed request, "welcome-en" on line 12
    expect([...at].sort()).toEqual([`welcome-cs ${file} 9`, `welcome-en ${file} 12`]);
  });
});

describe('--ignore and --fail-on', () => {
  it('--ignore leaves a code out; --fail-on makes a warning code fatal (exit 1), or every warning', async () => {
    const ignored = await run(['deliveries/b-warned.json', '-o', 'json', '--ignore', 'missing_text_part', '--max-warnings', '0', '--ignore', 'insecure_link']);
    expect(ignored.code).toBe(0);
    expect(JSON.parse(ignored.stdout).render.warnings).toEqual([]);
    // in JUnit an ignored check is a skipped test case, not a passing one
    const skipped = await run(['deliveries/b-warned.json', '-o', 'junit', '--ignore', 'insecure_link,missing_text_part']);
    expect(skipped.stdout).toMatch(/name="insecure_link">\n\s+<skipped message="left out by --ignore"\/>\n\s+<\/testcase>/);
    expect(skipped.stdout).toMatch(/<testsuite name="[^"]+" tests="\d+" failures="0" errors="0" skipped="2">/);
    expect(skipped.stdout).toMatch(/<testsuites name="convx validate" tests="\d+" failures="0" skipped="2">/);
    const fatal = await run(['deliveries/b-warned.json', '-o', 'json', '--fail-on', 'insecure_link']);
    expect(fatal.code).toBe(1);
    expect(fatal.stderr).toBe('convx: not ready: 1 error (insecure_link)\n');
    const body = JSON.parse(fatal.stdout);
    expect([body.render.errors.map((f: { code: string }) => f.code), body.render.warnings.map((f: { code: string }) => f.code)]).toEqual([['insecure_link'], ['missing_text_part']]);
    const junit = await run(['deliveries/b-warned.json', '-o', 'junit', '--fail-on', 'warning']);
    expect(junit.code).toBe(1);
    expect(junit.stdout).toMatch(/name="insecure_link">\n\s+<failure type="error" message="made fatal by --fail-on: /);
    expect((await run(['deliveries/b-warned.json', '-o', 'json', '--fail-on', 'error'])).code).toBe(0);
  });

  it('an unknown code is exit 2 listing the valid ones', async () => {
    const r = await run(['deliveries/a-good.json', '--ignore', 'insecure_lnk']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^convx: error: --ignore: unknown code insecure_lnk; the codes are invalid_request, asset_not_found, .*insecure_link.*\nhint: did you mean insecure_link\?\n$/);
  });
});

describe('completion', () => {
  it('completes the codes of --ignore and --fail-on', async () => {
    const r = await cli(['__complete', 'validate', '--fail-on', 'insecure_']);
    expect(r.stdout).toBe('insecure_link\n');
  });
});

describe('the policy on a response', () => {
  it('ignores and makes fatal information codes too', async () => {
    const { applyPolicy, findingPolicy } = await import('../src/validation/policy.js');
    const { invalidResponse } = await import('../src/model/validation.js');
    const response = invalidResponse([]);
    response.render.information = [
      { code: 'client_partial', message: 'p' },
      { code: 'missing_color_scheme_meta', message: 'm' },
    ];
    const ignored = applyPolicy(response, findingPolicy('missing_color_scheme_meta', undefined));
    expect(ignored.render.information!.map((f) => f.code)).toEqual(['client_partial']);
    const fatal = applyPolicy(response, findingPolicy('missing_color_scheme_meta', 'client_partial'));
    expect([fatal.render.errors.map((f) => f.code), fatal.render.information]).toEqual([['client_partial'], undefined]);
  });
});
