/**
 * Issue 22, item 3 (answers to paste): order -o json carries why an order is not a conversion,
 * in both modes byte for byte; the order and contact cards say durations in days and hours, times
 * in the --tz (or CONVX_TZ, or profile) zone beside UTC, an automation as an automation, and wrap
 * at spaces to the terminal; -o markdown for order, contact and report.
 */
import { describe, expect, it } from 'vitest';
import { duration } from '../src/output/cards.js';
import { wrapRuns } from '../src/output/terminal.js';
import { escapeMarkdown } from '../src/output/markdown.js';
import { cli, csv, servedDataset, shop } from './helpers.js';

/** A source name a markdown table must escape: a pipe, backticks, a line break and an ESC sequence. */
const NASTY = 'Win | `back`\nnow \x1b[2J';

/**
 * c1's order o1 (2024-03-01 10:00 UTC) decided by a click on automation a1 5 days 2 hours before;
 * c2's order o2 (2024-03-03) by campaign k1, with a refund; c3's o-cancel is cancelled.
 */
const data = () =>
  shop({
    orders: [
      { id: 'o1', contact: 'c1', at: '2024-03-01T10:00:00Z', net: 100, gross: 121 },
      { id: 'o2', contact: 'c2', at: '2024-03-03T10:00:00Z', net: 50, gross: 60.5 },
      { id: 'o2', contact: 'c2', at: '2024-03-04T10:00:00Z', net: -10, gross: -12.1, refund: true },
      { id: 'o-cancel', contact: 'c3', at: '2024-03-10T10:00:00Z', status: 'cancelled' },
    ],
    touches: [
      { contact: 'c1', at: '2024-02-25T08:00:00Z', type: 'automation', source: 'a1' },
      { contact: 'c2', at: '2024-03-03T09:40:00Z', source: 'k1' },
      { contact: 'c3', at: '2024-03-09T10:00:00Z', source: 'k1' },
    ],
    sources: [
      ['automation', 'a1', NASTY, 'a1', '', '', '', '', ''],
      ['campaign', 'k1', 'Spring sale, the long one with many words in its name', 'k1', '', '', '', '', ''],
    ],
    files: {
      'contacts.csv': csv(['contact_id', 'client_contact_id', 'email', 'first_name', 'surname'], [
        ['c1', 'CL-1', 'ann@example.com', 'Ann', 'Novak'],
        ['c2', 'CL-2', 'bob@example.com', 'Bob', 'Dvorak'],
      ]),
    },
  });

const served = servedDataset(data);
const { local, api } = served;
const card = (argv: string[], env: Record<string, string> = {}) => served.kept([...argv, '--data', served.dir()], { tty: true, env: { NO_COLOR: '1', ...env } });

describe('order -o json says why an order is not a conversion', () => {
  it('carries the reasons, the same bytes in local and API mode, and still exits 1', async () => {
    const [a, b] = await Promise.all([local(['order', 'o-cancel', '-o', 'json']), api(['order', 'o-cancel', '-o', 'json'])]);
    expect([a.code, b.code]).toEqual([1, 1]);
    expect(b.stdout).toBe(a.stdout);
    const body = JSON.parse(a.stdout);
    expect(body.conversions).toEqual([]);
    expect(body.reasons).toEqual(['the order is cancelled (status "cancelled"), so neither it nor its refunds count']);
    expect(a.stderr).toMatch(/order o-cancel is not a conversion:\n {2}- the order is cancelled/);
    // a conversion's document is as it was: no reasons
    expect(JSON.parse((await local(['order', 'o1', '-o', 'json'])).stdout)).not.toHaveProperty('reasons');
  });
});

describe('the order and contact cards', () => {
  it('say durations in days and hours', async () => {
    expect([duration(325.86), duration(122), duration(120), duration(5.4), duration(0.33), duration(24.2)]).toEqual(['13 days 14 h', '5 days 2 h', '5 days', '5 h', '20 min', '1 day']);
    const order = await card(['order', 'o1']);
    expect(order.stdout).toContain('2024-02-25T08:00:00.000Z, 5 days 2 h before the order (last-click, 30-day window)');
    expect(order.stdout).not.toContain('122 h');
    const contact = await card(['contact', 'c2']);
    expect(contact.stdout).toContain('click 2024-03-03T09:40:00.000Z, 20 min before');
  });

  it('name an automation as an automation, a campaign as a campaign', async () => {
    const automation = (await card(['order', 'o1'])).stdout;
    expect(automation).toMatch(/\n {2}automation {2}a1\n/);
    expect(automation).not.toMatch(/\n {2}campaign +a1/);
    expect((await card(['order', 'o2'])).stdout).toMatch(/\n {2}campaign {2}k1\n/);
  });

  it('show times in the --tz zone (or CONVX_TZ) beside UTC, and one time in UTC', async () => {
    const prague = (await card(['order', 'o2', '--tz', 'Europe/Prague'])).stdout;
    expect(prague).toContain('2024-03-03T09:40:00.000Z (2024-03-03 10:40:00 Europe/Prague), 20 min before the order');
    expect(prague).toMatch(/order {5}2024-03-03T10:00:00\.000Z \(2024-03-03 11:00:00 Europe\/Prague\) {2}60\.50 EUR/);
    const fromEnv = (await card(['order', 'o2'], { CONVX_TZ: 'america/new_york' })).stdout;
    expect(fromEnv).toContain('2024-03-03T09:40:00.000Z (2024-03-03 04:40:00 America/New_York)');
    const utc = (await card(['order', 'o2', '--tz', 'UTC'], { CONVX_TZ: 'Europe/Prague' })).stdout;
    expect(utc).toBe((await card(['order', 'o2'])).stdout);
    expect(utc).not.toContain('(2024-');
    const contact = (await card(['contact', 'c2', '--tz', 'Asia/Tokyo'])).stdout;
    expect(contact).toContain('2024-03-03T10:00:00.000Z (2024-03-03 19:00:00 Asia/Tokyo)  o2');
    const bad = await local(['order', 'o2', '--tz', 'Europe/Prag']);
    expect([bad.code, bad.stdout]).toEqual([2, '']);
    expect(bad.stderr).toMatch(/--tz: "Europe\/Prag" is not a time zone.*did you mean Europe\/Prague/);
    const badEnv = await local(['contact', 'c2'], { CONVX_TZ: '+02:00' });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/CONVX_TZ: "\+02:00" is an offset/);
  });

  it('order: --from and --to are days of the --tz zone, in both modes', async () => {
    // o2 is 2024-03-03 10:00 UTC: 2024-03-04 00:00 at UTC+14
    for (const run of [local, api]) {
      expect((await run(['order', 'o2', '--from', '2024-03-03', '--to', '2024-03-03', '-o', 'json'])).code).toBe(0);
      const zoned = await run(['order', 'o2', '--from', '2024-03-03', '--to', '2024-03-03', '--tz', 'Pacific/Kiritimati', '-o', 'json']);
      expect(zoned.code).toBe(1);
      expect(JSON.parse(zoned.stdout).conversions).toEqual([]);
      expect((await run(['order', 'o2', '--from', '2024-03-04', '--to', '2024-03-04', '--tz', 'Pacific/Kiritimati', '-o', 'json'])).code).toBe(0);
    }
  });

  it('wrap at spaces to the terminal, never inside a word, a wrapped value under its first line', async () => {
    for (const argv of [['order', 'o2', '--tz', 'Europe/Prague'], ['contact', 'c2']]) {
      const whole = await served.kept.terminal([...argv, '--data', served.dir()], 400);
      const narrow = await served.kept.terminal([...argv, '--data', served.dir()], 50);
      expect(narrow.code, narrow.stderr).toBe(0);
      const words = (text: string) => text.split(/\s+/).filter(Boolean);
      // the same words in the same order: none broken
      expect(words(narrow.stdout)).toEqual(words(whole.stdout));
      const lines = narrow.stdout.trimEnd().split('\n');
      // a line longer than the terminal holds one word that is (a link)
      for (const line of lines) if (line.length > 50) expect(line.trim().split(/ +/), line).toHaveLength(2);
      expect(lines.length).toBeGreaterThan(whole.stdout.trimEnd().split('\n').length);
    }
    const order = (await served.kept.terminal(['order', 'o2', '--data', served.dir(), '--tz', 'Europe/Prague'], 50)).stdout;
    expect(order).toContain('\n  click     2024-03-03T09:40:00.000Z (2024-03-03\n            10:40:00 Europe/Prague), 20 min before\n            the order (last-click, 30-day window)\n');
    // over the width: a word stays whole; runs that fit stay as they are
    expect(wrapRuns([{ text: 'abc defghijk lm' }], 6, 2).map((l) => l.map((r) => r.text).join(''))).toEqual(['abc', '  defghijk', '  lm']);
    expect(wrapRuns([{ text: '  two  spaces ' }], 40, 2)).toEqual([[{ text: '  two  spaces ' }]]);
  });
});

describe('notes on a terminal wrap at spaces', () => {
  it('the note of the columns a report table left out at 80 columns breaks no word ("A\\nvg order")', async () => {
    const argv = ['report', '--data', served.dir(), '--from', '2024-03-01', '--to', '2024-03-31', '--limit', '1'];
    const run = await served.kept.terminal(argv, 80, { CONVX_PROGRESS_DELAY_MS: '600000' }, { stderrIsTTY: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('Avg order (EUR)');
    expect(run.stderr).toMatch(/columns? left out to fit the terminal/);
    for (const line of run.stderr.trimEnd().split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
    // piped, a note is one line as before
    const piped = await served.kept.terminal(argv, 80, { CONVX_PROGRESS_DELAY_MS: '600000' });
    expect(piped.stderr.split('\n').find((l) => l.includes('left out'))).toMatch(/Avg order \(EUR\)\); --wide shows every column$/);
  });
});

describe('-o markdown', () => {
  it('order: a card that pastes, values escaped and made safe', async () => {
    const run = await local(['order', 'o1', '-o', 'markdown']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe('**Order o1: a conversion of automation "Win \\| \\`back\\` now \ufffd\\[2J"**');
    expect(lines.slice(2, 4)).toEqual(['|  |  |', '|---|---|']);
    expect(run.stdout).toContain('| source | Win \\| \\`back\\` now \ufffd\\[2J (automation a1) |');
    expect(run.stdout).toContain('| automation | a1 |');
    expect(run.stdout).toContain('| click | 2024-02-25T08:00:00.000Z, 5 days 2 h before the order (last-click, 30-day window) |');
    expect(run.stdout).not.toContain('\x1b');
    // every table line has as many unescaped pipes as the header
    for (const line of lines.filter((l) => l.startsWith('|'))) expect(line.replace(/\\\|/g, '').split('|')).toHaveLength(4);
    const api22 = await api(['order', 'o1', '-o', 'markdown']);
    expect(api22.stdout).toBe(run.stdout);
    const not = await local(['order', 'o-cancel', '-o', 'markdown']);
    expect(not.code).toBe(1);
    expect(not.stdout).toBe('**Order o-cancel is not a conversion**\n\n- the order is cancelled (status "cancelled"), so neither it nor its refunds count\n');
  });

  it('contact: who, then a table each of orders, conversions and clicks', async () => {
    const run = await local(['contact', 'bob@example.com', '-o', 'markdown', '--tz', 'Europe/Prague']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^\*\*Contact c2 \/ CL-2 \(Bob Dvorak\) \\<bob@example\.com\\>\*\* \(found by e-mail\)\n/);
    expect(run.stdout).toContain('**Conversions (2)**\n\n| Date | Transaction | Amount | Source | Click |\n|---|---|---:|---|---|\n');
    expect(run.stdout).toContain('| 2024-03-04T10:00:00.000Z (2024-03-04 11:00:00 Europe/Prague) | refund o2 | -12.10 EUR |');
    expect(run.stdout).toContain('**Clicks (1)**');
    expect((await api(['contact', 'bob@example.com', '-o', 'markdown', '--tz', 'Europe/Prague'])).stdout).toBe(run.stdout);
  });

  it('report: a GFM table of the terminal table\'s columns, numbers aligned right, with the total', async () => {
    const run = await local(['report', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'markdown']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('| Source | Type | Orders | Revenue (EUR) | Refunds | Refunded (EUR) | Gross (EUR) | Contacts | Avg order (EUR) |');
    expect(lines[1]).toBe('|---|---|---:|---:|---:|---:|---:|---:|---:|');
    expect(lines).toHaveLength(5);
    expect(lines[4]).toBe('| Total |  | 2 | 181.50 | 1 | -12.10 | 169.40 |  |  |');
    expect(run.stdout).toContain('| Win \\| \\`back\\` now \ufffd\\[2J | automation | 1 | 121.00 |');
  });

  it('only report, order and contact take it', async () => {
    const items = await local(['items', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'markdown']);
    expect(items.code).toBe(2);
    expect(items.stderr).toMatch(/"markdown" is not one of table, json, jsonl, csv, tsv$/m);
    const help = async (command: string) => (await cli([command, '--help'])).stdout.replace(/\s+/g, ' ');
    expect(await help('order')).toContain('output format: table, json, jsonl, csv, tsv, markdown ');
    expect(await help('contact')).toContain('output format: table, json, jsonl, csv, tsv, markdown ');
    expect(await help('report')).toContain('output format: table, json, jsonl, csv, tsv, html, markdown ');
  });

  it('escapes what markdown would read: pipes, backticks, brackets, emphasis, and no line break', () => {
    expect(escapeMarkdown('a|b`c\\d<e>*f*_g_[h]\ni\r\nj')).toBe('a\\|b\\`c\\\\d\\<e\\>\\*f\\*\\_g\\_\\[h\\] i  j');
  });
});
