/**
 * Issue 17, point 5: data values never rewrite the terminal. Names, ids and subjects holding
 * ESC sequences (clear screen, OSC 8 links, OSC 0 window titles ended by BEL or ST), C1
 * controls (U+009B is CSI by itself) and bidi overrides reach every human-readable output
 * (report, items, drill, order, contact, validate, data check, messages on stderr) as
 * visible U+FFFD, never raw; json keeps the exact values; wide East Asian characters take two
 * columns, so a table of CJK names lines up.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { fit, safeJsonText, safeLines, safeValue, textWidth } from '../src/output/terminal.js';
import { cli, csv, dataset, onTerminal, shop, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const ESC = '\x1b';
const CLEAR = `${ESC}[2J`;
const LINK = `${ESC}]8;;https://evil.example/${'\x07'}click here${ESC}]8;;${'\x07'}`;
const TITLE_BEL = `${ESC}]0;pwned${'\x07'}`;
const TITLE_ST = `${ESC}]0;owned${ESC}\\`;
/** CSI as one C1 character: "clear the screen" without any ESC. */
const C1_CLEAR = '\u009b2J';
const RLO = '\u202e';
const ISOLATE = '\u2066x\u2069';

/** Every character no terminal output may hold raw (line feeds aside, which only the layout writes). */
const RAW = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
const rawIn = (text: string, tabs = false) => [...text].filter((ch) => RAW.test(ch) && !(tabs && ch === '\t')).map((ch) => `U+${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`);

const SOURCE_NAME = `Spring${CLEAR} sale${LINK}`;
const OTHER_NAME = `Winter${C1_CLEAR}${TITLE_ST} ${RLO}elas`;
const CJK_NAME = '𠮷野家の春セール';
const FIRST = `Ann${CLEAR}${TITLE_BEL}`;
const SURNAME = `${RLO}kavoN${ISOLATE}${'\x7f'}`;
const BAD_CONTACT = `c9${TITLE_BEL}`;
const SUBJECT = `Hello {{ contact.firstName }} ${LINK}`;

const HTML = '<html><body><p>Hi</p><a href="https://x.dev/unsubscribe">Unsubscribe</a></body></html>';

const dir = shop({
  orders: [
    { id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00Z', net: 100, gross: 121 },
    { id: 'o2', contact: 'c2', at: '2024-03-03T10:00:00Z', net: 50, gross: 60.5 },
    { id: 'o3', contact: 'c3', at: '2024-03-04T10:00:00Z', net: 10, gross: 12.1 },
    { id: 'o9', contact: BAD_CONTACT, at: '2024-03-05T10:00:00Z', net: 10, gross: 12.1 },
  ],
  touches: [
    { contact: 'c1', at: '2024-03-01T00:00:00Z', source: 'k1' },
    { contact: 'c2', at: '2024-03-01T00:00:00Z', source: 'k2' },
    { contact: 'c3', at: '2024-03-01T00:00:00Z', source: 'k3' },
  ],
  sources: [
    ['campaign', 'k1', SOURCE_NAME, 'k1', '', '', '', '', '2024-02-01T00:00:00Z'],
    ['campaign', 'k2', OTHER_NAME, 'k2', '', '', '', '', '2024-02-01T00:00:00Z'],
    ['campaign', 'k3', CJK_NAME, 'k3', '', '', '', '', '2024-02-01T00:00:00Z'],
  ],
  files: {
    'contacts.csv': csv(
      ['contact_id', 'client_contact_id', 'email', 'first_name', 'surname', 'language', 'country', 'consent', 'unsubscribed', 'lists'],
      [
        ['c1', 'CL-1', 'ann@example.com', FIRST, SURNAME, 'cs', 'CZ', true, false, 'l1'],
        ['c2', 'CL-2', 'bob@example.com', 'Bob', 'Dvorak', 'cs', 'CZ', true, false, 'l1'],
        ['c3', 'CL-3', 'cy@example.com', '吉田', '太郎', 'cs', 'CZ', true, false, 'l1'],
      ],
    ),
    'assets.csv': csv(['asset_id', 'language', 'subject', 'html', 'text'], [['promo-cs', 'cs', SUBJECT, HTML, 'Hi']]),
  },
});
const PERIOD = ['--data', dir, '--from', '2024-03-01', '--to', '2024-03-31'];
const request = join(tempDir(), 'request.json');
writeFileSync(request, JSON.stringify({ audience: { lists: ['l1'] }, assets: [{ assetId: 'promo-cs' }], options: { sampleSize: 3 } }));

/** Columns a text takes, by an independent rule: wide CJK and fullwidth ranges (planes 2 and 3 too) count two. */
const WIDE_REFERENCE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff01-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}]/u;
const columns = (text: string) => [...text].reduce((sum, ch) => sum + (WIDE_REFERENCE.test(ch) ? 2 : 1), 0);
const tableLines = (text: string) => text.split('\n').filter((l) => /^[┌│├└]/.test(l));

/** Every line of the table as wide as the first, by the reference rule. */
function expectAligned(text: string, label: string): void {
  const lines = tableLines(text);
  expect(lines.length, label).toBeGreaterThan(2);
  for (const line of lines) expect(columns(line), `${label}: ${line}`).toBe(columns(lines[0]!));
}

/** A human output holds none of the raw characters, and shows that something was replaced. */
function expectDefused(text: string, label: string, tabs = false): void {
  expect(rawIn(text, tabs), label).toEqual([]);
  expect(text, label).toContain('\ufffd');
}

/** convx with stdout and stderr both terminals (colours off), the way a person runs it; no progress line (its own ESC[2K) however slow the machine. */
const terminal = (argv: string[], width = 200) => onTerminal(argv, width, { CONVX_PROGRESS_DELAY_MS: '600000' }, { stderrIsTTY: true });

/**
 * dir opened once and lent to the commands of the tests below that look at what they print from its
 * values (kept-backends.ts); terminal() and the messages on stderr open it afresh.
 */
const kept = keptBackends();
/** convx with stdout a terminal of the given width, on the kept backends. */
const keptTerminal = (argv: string[], width = 200) => kept.terminal(argv, width);

describe('data values never reach a terminal raw', () => {
  it('report: the table replaces ESC sequences, C1 CSI and bidi overrides with U+FFFD, and the rows line up', async () => {
    const out = await keptTerminal(['report', ...PERIOD]);
    expect(out.code, out.stderr).toBe(0);
    expectDefused(out.stdout, 'report');
    expect(out.stdout).toContain('Spring\ufffd[2J sale\ufffd]8;;https://evil.example/\ufffdclick here');
    expect(out.stdout).toContain('Winter\ufffd2J\ufffd]0;owned\ufffd\\ \ufffdelas');
    expectAligned(out.stdout, 'report');
  });

  it('items and drill: the tables (source names) hold no raw control character', async () => {
    for (const argv of [['items', ...PERIOD], ['drill', 'k1', ...PERIOD], ['drill', 'campaign:k2', ...PERIOD]]) {
      const out = await keptTerminal([...argv, '--wide']);
      expect(out.code, `${argv.join(' ')}: ${out.stderr}`).toBe(0);
      expectDefused(out.stdout + out.stderr, argv.join(' '));
      expectAligned(out.stdout, argv.join(' '));
    }
  });

  it('order: the card of a conversion shows names and the source defused', async () => {
    const out = await keptTerminal(['order', 'o1', '--data', dir]);
    expect(out.code, out.stderr).toBe(0);
    expectDefused(out.stdout, 'order');
    expect(out.stdout).toContain('Spring\ufffd[2J sale');
    expect(out.stdout).toContain('Ann\ufffd[2J\ufffd]0;pwned\ufffd \ufffdkavoN\ufffdx\ufffd\ufffd');
  });

  it('contact: the card (name, orders, conversions, clicks) holds none of the raw characters', async () => {
    const out = await keptTerminal(['contact', 'c1', '--data', dir]);
    expect(out.code, out.stderr).toBe(0);
    expectDefused(out.stdout, 'contact');
    expect(out.stdout).toContain('(Ann\ufffd[2J\ufffd]0;pwned\ufffd \ufffdkavoN');
    expect(out.stdout).toContain('"Spring\ufffd[2J sale\ufffd]8;;');
  });

  it('validate: the summary shows the rendered subject (a hostile first name and an OSC 8 link) defused', async () => {
    const out = await keptTerminal(['validate', request, '--data', dir]);
    expect(out.stdout).toMatch(/Samples/);
    expectDefused(out.stdout, 'validate');
    expect(out.stdout).toContain('Hello Ann\ufffd[2J\ufffd]0;pwned\ufffd \ufffd]8;;https://evil.example/');
  });

  it('messages on stderr that quote a data value (an error, a warning, a note) and data check\'s findings are defused', async () => {
    // order o9's contact id holds an OSC 0: the finding quotes it
    const out = await terminal(['order', 'o9', '--data', dir]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`contact c9\ufffd]0;pwned\ufffd has no click`);
    expect(rawIn(out.stderr)).toEqual([]);
    // the line breaks of the message itself stay
    expect(out.stderr).toMatch(/is not a conversion:\n {2}- contact/);
    // a note (the empty result's explanation) quotes the filter it was given
    const empty = await terminal(['items', ...PERIOD, '--contact', `x${TITLE_ST}`]);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stderr).toContain("filters: --contact 'x\ufffd]0;owned\ufffd\\'");
    expect(rawIn(empty.stderr)).toEqual([]);
    // data check quotes the ids of the rows behind a finding
    const negative = shop({ orders: [{ id: `o-${CLEAR}`, at: '2024-03-05T10:00:00Z', net: -5, gross: -6 }], touches: [{ at: '2024-03-01T00:00:00Z' }] });
    const check = await terminal(['data', 'check', negative]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('e.g. order o-\ufffd[2J (orders.csv, line 2)');
    expect(rawIn(check.stdout + check.stderr), check.stdout).toEqual([]);
    // a value that is not of its column's type: quoted with ESC shown as U+FFFD on a terminal, as every control is
    // (not as JSON's "\u001b"), a tab as \t (the value stays on its line); -o json holds the value's characters
    const typed = dataset({
      'orders.csv': `order_id,contact_id,datetime,currency,amount_wo_tax,amount_w_tax,status\no-1,c-1,2024-03-05T10:00:00Z,EUR,"${CLEAR}9\t${RLO}",1,completed\n`,
      'touches.csv': 'contact_id,datetime,touch,source_type,source_id\nc-1,2024-03-01T00:00:00Z,click,campaign,k\n',
    });
    const value = await terminal(['data', 'check', typed]);
    expect(value.stdout).toContain('column amount_wo_tax: "\ufffd[2J9\\t\ufffd" is not a decimal number');
    const failed = await terminal(['report', '--data', typed, ...PERIOD.slice(2)]);
    expect(failed.stderr).toContain('column amount_wo_tax: "\ufffd[2J9\\t\ufffd" is not a decimal number');
    expect(rawIn(value.stdout + failed.stderr)).toEqual([]);
    const json = await cli(['data', 'check', typed, '-o', 'json']);
    const problems = (JSON.parse(json.stdout) as { problems: { text: string }[] }).problems;
    expect(problems.map((p) => p.text)).toEqual([`orders.csv, line 2, column amount_wo_tax: "${CLEAR}9\\t${RLO}" is not a decimal number with a dot (at most 4 decimals)`]);
  });

  it('json keeps the exact values (off a terminal byte for byte; on a terminal the same data, escaped)', async () => {
    const report = await kept(['report', ...PERIOD, '-o', 'json']);
    expect(report.stdout).toContain(JSON.stringify(OTHER_NAME));
    const names = (JSON.parse(report.stdout) as { conversions: { name: string }[] }).conversions.map((r) => r.name).sort();
    expect(names).toEqual([SOURCE_NAME, OTHER_NAME, CJK_NAME].sort());
    const contact = JSON.parse((await kept(['contact', 'c1', '--data', dir, '-o', 'json'])).stdout) as { contact: { firstName: string; surname: string } };
    expect(contact.contact).toMatchObject({ firstName: FIRST, surname: SURNAME });
    const validation = JSON.parse((await kept(['validate', request, '--data', dir, '-o', 'json'])).stdout) as { render: { samples: { subject: string }[] } };
    expect(validation.render.samples.map((s) => s.subject)).toContain(`Hello ${FIRST} ${LINK}`);
    // on a terminal: no raw C1 or bidi override, and the parsed data is the very same
    for (const argv of [['report', ...PERIOD, '-o', 'json'], ['items', ...PERIOD, '-o', 'jsonl'], ['contact', 'c1', '--data', dir, '-o', 'json']]) {
      const shown = await keptTerminal(argv);
      const exact = await kept(argv);
      expect(rawIn(shown.stdout), argv.join(' ')).toEqual([]);
      const parse = (text: string) => text.trim().split('\n').length > 1 && argv.includes('jsonl') ? text.trim().split('\n').map((l) => JSON.parse(l)) : JSON.parse(text);
      expect(parse(shown.stdout), argv.join(' ')).toEqual(parse(exact.stdout));
    }
  });

  it('csv and tsv: the exact data off a terminal (a pipe, a file); on a terminal, defused like the tables', async () => {
    for (const format of ['csv', 'tsv']) {
      const piped = await kept(['items', ...PERIOD, '-o', format, '--fields', 'orderId,source.name']);
      expect(piped.stdout, format).toContain(SOURCE_NAME);
      const shown = await keptTerminal(['items', ...PERIOD, '-o', format, '--fields', 'orderId,source.name']);
      // tsv's own separators are tabs
      expectDefused(shown.stdout, format, format === 'tsv');
      expect(shown.stdout.split('\n').length).toBe(piped.stdout.split('\n').length);
    }
  });
});

describe('API mode prints what local mode prints, defused the same way', () => {
  const SECRET = 'test-secret-that-is-long-enough';
  let server: RunningServer;
  let token: string;
  beforeAll(async () => {
    server = await startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(SECRET, 'default', '1h');
  });
  afterAll(async () => {
    await server?.close();
  });

  it('report, contact, order and validate on a terminal: the same defused text as local mode', async () => {
    for (const argv of [['report', '--from', '2024-03-01', '--to', '2024-03-31'], ['contact', 'c1'], ['order', 'o1'], ['validate', request]]) {
      const local = await keptTerminal([...argv, '--data', dir]);
      const delivery = argv[0] === 'validate' ? ['--delivery-api', `${server.url}/v4`] : [];
      const api = await onTerminal([...argv, '--api', `${server.url}/v1`, ...delivery], 200, { CONVX_TOKEN: token });
      expect(api.code, `${argv[0]}: ${api.stderr}`).toBe(local.code);
      expectDefused(api.stdout, `api ${argv[0]}`);
      expect(api.stdout, argv[0]).toBe(local.stdout);
    }
  });
});

describe('wide characters take two columns', () => {
  it('a table of CJK names (a plane-2 ideograph and kana) lines up on a terminal, at full width and cut', async () => {
    for (const width of [200, 60, 44]) {
      const out = await keptTerminal(['report', ...PERIOD, '--no-color'], width);
      expect(out.code, out.stderr).toBe(0);
      expectAligned(out.stdout, `width ${width}`);
      for (const line of tableLines(out.stdout)) expect(columns(line), `width ${width}`).toBeLessThanOrEqual(width);
    }
    const narrow = await keptTerminal(['report', ...PERIOD], 44);
    expect(narrow.stdout).toMatch(/𠮷野家/);
  });

  it('textWidth and fit: wide and fullwidth count two, marks and zero-width none; a cut never splits a wide character', () => {
    expect(textWidth('𠮷野家')).toBe(6);
    expect(textWidth('ＡＢＣ')).toBe(6);
    expect(textWidth('한국어')).toBe(6);
    expect(textWidth('©™↔')).toBe(3);
    expect(textWidth('e\u0301')).toBe(1);
    expect(textWidth('a\u200bb')).toBe(2);
    expect(textWidth('👍')).toBe(2);
    expect(textWidth('❤️')).toBe(2);
    for (let width = 1; width <= 8; width++) {
      const cut = fit('𠮷野家の春セール', width);
      expect(textWidth(cut), `width ${width}: ${cut}`).toBeLessThanOrEqual(width);
      expect(cut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    }
    expect(fit('𠮷野家の春', 6)).toBe('𠮷野…');
  });
});

describe('the replacement (output/terminal.ts)', () => {
  it('safeValue: whitespace controls become a space, every other control, DEL, C1 and bidi override U+FFFD', () => {
    expect(safeValue('a\tb\nc\r\nd')).toBe('a b c  d');
    expect(safeValue(`x${CLEAR}`)).toBe('x\ufffd[2J');
    expect(safeValue('\x00\x07\x7f\u0080\u009b\u009f')).toBe('\ufffd'.repeat(6));
    expect(safeValue('\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069')).toBe('\ufffd'.repeat(9));
    // right-to-left text and its marks stay as they are
    expect(safeValue('שלום\u200f abc \u200e مرحبا\u061c')).toBe('שלום\u200f abc \u200e مرحبا\u061c');
    expect(safeValue('Müller 吉田 ©')).toBe('Müller 吉田 ©');
  });

  it('safeLines keeps line feeds and tabs; safeJsonText escapes what JSON.stringify leaves raw, the same JSON data', () => {
    expect(safeLines(`one\n\ttwo${CLEAR}\r`)).toBe('one\n\ttwo\ufffd[2J ');
    const value = { name: `a\u009b2J\u202eb\x7f\u2028` };
    const text = safeJsonText(JSON.stringify(value));
    expect(rawIn(text)).toEqual([]);
    expect(text).not.toMatch(/[\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('shell completion of values from the data', () => {
  it('never offers a value a terminal would not show as it is', async () => {
    const hostile = `k${TITLE_BEL}`;
    const data = shop({
      orders: [{ id: 'o1', contact: 'c1', at: '2024-03-02T10:00:00Z', net: 100, gross: 121 }],
      touches: [
        { contact: 'c1', at: '2024-03-01T00:00:00Z', source: 'k1' },
        { contact: 'c1', at: '2024-03-01T01:00:00Z', source: hostile },
        { contact: 'c1', at: '2024-03-01T02:00:00Z', source: `k${RLO}2` },
      ],
    });
    const run = await cli(['completion', '--values', 'sources', '--data', data]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n').filter(Boolean)).toEqual(['k1']);
  });
});
