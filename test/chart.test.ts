/**
 * Issue 19, point 6: pictures in the terminal, as pure formatters. A chart of buckets
 * (output/chart.ts: bars scaled to eighths of a row, dots per series, a y axis in the
 * currency, x labels that never touch), sparklines (output/sparkline.ts) and the report
 * table's trend column (output/table.ts, through the writer). Properties, plus two small
 * charts written out by hand.
 */
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { chartHeight, FILLS, MARKS, MIN_PLOT_COLUMNS, MIN_PLOT_ROWS, renderChart, tickText, tickTexts, trendChartInput, type ChartInput, type ChartOptions } from '../src/output/chart.js';
import type { TrendBucket } from '../src/model/types.js';
import { EIGHTHS, sparkline, squeeze } from '../src/output/sparkline.js';
import { layoutTable, SPARK_MAX, SPARK_MIN } from '../src/output/table.js';
import { textWidth } from '../src/output/terminal.js';
import { ResultWriter } from '../src/output/writer.js';

const plain = new Chalk({ level: 0 });
const colour = new Chalk({ level: 1 });
const SGR = /\x1b\[[0-9;]*m/g;
const strip = (text: string) => text.replace(SGR, '');
/** Every control character and bidi override but the line feed. */
const RAW = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const days = (n: number) => Array.from({ length: n }, (_, i) => new Date(Date.UTC(2024, 0, 1 + i)).toISOString().slice(0, 10));
const one = (values: number[], labels = days(values.length)): ChartInput => ({ labels, series: [{ name: 'Revenue', values }], unit: 'EUR' });
const chart = (input: ChartInput, options: Partial<ChartOptions> = {}) => renderChart(input, { width: 80, height: 12, color: plain, ...options });

/** The plot of a chart: its rows (top first) as arrays of cells, the axis line, the x labels' line and where the plot starts. */
function parse(text: string) {
  const lines = strip(text).trimEnd().split('\n');
  const axisRow = lines.findIndex((line) => line.includes('└'));
  const at = lines[axisRow]!.indexOf('└') + 1;
  const rows = lines.slice(0, axisRow).filter((line) => /[┤│]/.test(line[at - 1] ?? ''));
  return { lines, rows: rows.map((line) => [...line.slice(at)]), axis: [...lines[axisRow]!.slice(at)], labels: lines[axisRow + 1]!, at };
}

const eighthsOf = (ch: string | undefined) => (ch === undefined || ch === ' ' ? 0 : (FILLS as readonly string[]).includes(ch) ? 8 : EIGHTHS.indexOf(ch as (typeof EIGHTHS)[number]) + 1);
/** How many eighths of a row the bar in plot column `column` fills. */
const barHeight = (rows: string[][], column: number) => rows.reduce((sum, row) => sum + eighthsOf(row[column]), 0);
/** The starting columns of the bars in a plot row (runs of non-space cells). */
const runs = (row: string[]) => row.flatMap((ch, i) => (ch !== ' ' && (i === 0 || row[i - 1] === ' ') ? [i] : []));

describe('bars of one series', () => {
  it('scale to the height: the largest value fills it, half fills half, an eighth of it one eighth of a row', () => {
    // height 11: the unit line, 8 rows, the axis and the labels
    const { rows } = parse(chart(one([64, 32, 8, 3, 0]), { height: 11 }));
    expect(rows).toHaveLength(8);
    const starts = runs(rows.at(-1)!);
    expect(starts).toHaveLength(4);
    const heights = starts.map((c) => barHeight(rows, c));
    expect(heights).toEqual([64, 32, 8, 3]);
    // 3/64 of the height is the lowest cell's ▃, nothing above
    expect(rows.at(-1)![starts[3]!]).toBe('▃');
    expect(rows.slice(0, -1).every((row) => (row[starts[3]!] ?? ' ') === ' ')).toBe(true);
  });

  it('draw one bar per bucket, the same width each, and tick labels in the currency with 3-5 ticks', () => {
    const values = Array.from({ length: 20 }, (_, i) => 1000 + i * 123.45);
    const text = chart(one(values), { height: 16 });
    const { rows, lines } = parse(text);
    const starts = runs(rows.at(-1)!);
    expect(starts).toHaveLength(20);
    expect(new Set(starts.slice(1).map((s, i) => s - starts[i]!)).size).toBe(1);
    const ticks = lines.map((line) => line.match(/^\s*([-\d,.]+) [┤└]/)?.[1]).filter((t): t is string => t !== undefined);
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks.length).toBeLessThanOrEqual(5);
    expect(ticks[0]).toBe('3,345.55');
    expect(ticks.at(-1)).toBe('0');
    for (const tick of ticks) expect(tick).toMatch(/^\d{1,3}(,\d{3})*(\.\d{1,2})?$/);
    expect(lines[0]!.trim()).toBe('EUR');
  });

  it("an axis's ticks have as many decimals as the one that needs the most (0 as it is)", () => {
    expect(tickTexts([0, 16.8775, 33.755, 50.6325, 65.1])).toEqual(['0', '16.88', '33.76', '50.63', '65.10']);
    expect(tickTexts([-12.5, 0, 1000])).toEqual(['-12.5', '0', '1,000.0']);
    expect(tickTexts([0, 500, 1000])).toEqual(['0', '500', '1,000']);
  });

  it('figures of the ticks have no floating noise and no minus zero', () => {
    expect(tickText(1234.4999999)).toBe('1,234.5');
    expect(tickText(0.1 + 0.2)).toBe('0.3');
    expect(tickText(-0)).toBe('0');
    expect(tickText(1_234_567.891)).toBe('1,234,567.89');
  });

  it('two buckets written out by hand', () => {
    const text = chart({ labels: ['a', 'b'], series: [{ name: 'x', values: [2, 1] }], unit: 'EUR' }, { width: 20, height: 6, color: false });
    expect(text).toBe([' EUR', '2.00 ┤██████', '1.33 ┤██████ ▄▄▄▄▄▄', '     │██████ ██████', '   0 └──────────────', '      a      b', ''].join('\n'));
  });

  it('negative values hang below the zero tick', () => {
    const { rows, lines } = parse(chart(one([3, -1, 2]), { width: 40, height: 10 }));
    const zeroLine = lines.findIndex((line) => /^\s*0 ┤/.test(line));
    expect(zeroLine).toBeGreaterThan(0);
    const below = rows.slice(zeroLine - 1).map((row) => row.join(''));
    expect(below.join('')).toMatch(/[▀█]/);
    expect(lines.at(-2)).toMatch(/^\s*-[\d.]+ └/);
  });
});

describe('x labels', () => {
  it('never touch, show the first and the last, and stand under their buckets, at every width', () => {
    const labels = days(31);
    for (const width of [30, 40, 52, 60, 80, 100, 140]) {
      const text = chart(one(labels.map((_, i) => i + 1), labels), { width });
      const { labels: line, at } = parse(text);
      const shown = [...line.matchAll(/\S+/g)];
      expect(shown.length, `width ${width}`).toBeGreaterThanOrEqual(2);
      expect(shown[0]![0]).toBe(textWidth(labels[0]!) <= shown[0]![0].length ? labels[0] : shown[0]![0]);
      expect(labels[0]!.startsWith(shown[0]![0].replace(/…$/, ''))).toBe(true);
      expect(labels[30]!.startsWith(shown.at(-1)![0].replace(/…$/, ''))).toBe(true);
      expect(shown[0]!.index).toBe(at);
      // in the order of the buckets, with a space at least between two
      const indexes = shown.map((m) => labels.findIndex((l) => l.startsWith(m[0].replace(/…$/, ''))));
      expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
      shown.slice(1).forEach((m, i) => expect(m.index!).toBeGreaterThan(shown[i]!.index! + shown[i]![0].length));
      for (const l of strip(text).split('\n')) expect(textWidth(l), `width ${width}: ${l}`).toBeLessThanOrEqual(width);
    }
    // wide enough: whole dates, several of them
    const wide = parse(chart(one(labels.map((_, i) => i + 1), labels), { width: 100 }));
    expect(wide.labels).toContain('2024-01-01');
    expect(wide.labels).toContain('2024-01-31');
    expect(wide.labels.match(/2024-/g)!.length).toBeGreaterThan(3);
  });
});

describe('several series', () => {
  const two: ChartInput = {
    labels: days(10),
    series: [
      // apart: no two marks fall on one cell
      { name: 'Spring', values: [20, 21, 22, 23, 24, 25, 26, 27, 28, 29] },
      { name: 'Winter', values: [9, 8, 7, 6, 5, 4, 3, 2, 1, 0] },
    ],
    unit: 'EUR',
  };

  it('a dot chart: a mark and a colour per series, named in a legend', () => {
    const coloured = chart(two, { color: colour });
    const [legend] = coloured.split('\n');
    expect(legend).toContain('\x1b[36m● Spring\x1b[39m');
    expect(legend).toContain('\x1b[35m◆ Winter\x1b[39m');
    expect(coloured).toMatch(/\x1b\[36m●+\x1b\[39m/);
    expect(coloured).toMatch(/\x1b\[35m◆+\x1b\[39m/);
    // every mark carries its series' colour
    const plot = coloured.split('\n').slice(1).join('\n');
    expect(strip(plot.replace(/\x1b\[36m●+\x1b\[39m|\x1b\[35m◆+\x1b\[39m/g, ''))).not.toMatch(/[●◆]/);
    // without colour: the same picture, no escape code, still two marks
    for (const color of [plain, false as const]) {
      const text = chart(two, { color });
      expect(text).not.toContain('\x1b');
      expect(text).toBe(strip(coloured));
      expect(text.split('\n')[0]).toMatch(/● Spring {2}◆ Winter/);
      const { rows, axis } = parse(text);
      const cells = [...rows.flat(), ...axis].join('');
      expect(cells.match(/●/g)).toHaveLength(10);
      expect(cells.match(/◆/g)).toHaveLength(10);
    }
  });

  it('three buckets of two series written out by hand (the first series on top where they meet)', () => {
    const input = { labels: ['a', 'b', 'c'], series: [{ name: 'A', values: [0, 1, 2] }, { name: 'B', values: [2, 1, 0] }], unit: 'EUR' };
    expect(chart(input, { width: 16, height: 7 })).toBe([' EUR  ● A  ◆ B', '   2 ┤◆     ●', '     │', '   1 ┤   ●', '     │', '   0 └●─────◆──', '      a  b  c', ''].join('\n'));
  });

  it('grouped bars: side by side, in colours, or in different fills without colour', () => {
    const coloured = chart(two, { kind: 'bars', color: colour });
    expect(coloured).toContain('\x1b[36m█ Spring');
    expect(coloured).toContain('\x1b[35m█ Winter');
    expect(strip(coloured)).not.toMatch(/▓/);
    const text = chart(two, { kind: 'bars', color: plain });
    expect(text).not.toContain('\x1b');
    expect(text.split('\n')[0]).toMatch(/█ Spring {2}▓ Winter/);
    const { rows } = parse(text);
    // ten groups of two bars (the last bucket's second bar is 0), the first series' left of the second's
    expect(runs(rows.at(-1)!)).toHaveLength(10);
    expect(rows.at(-1)!.join('')).toContain('███▓▓▓');
    const even = chart({ ...two, series: two.series.map((s) => ({ ...s, values: s.values.map(() => 5) })) }, { kind: 'bars' });
    const lines = parse(even).rows.map((row) => row.join('').trim());
    expect(new Set(lines)).toEqual(new Set([Array(10).fill('███▓▓▓').join(' ')]));
  });

  it('a legend too long for one line wraps, and the chart still fits its height', () => {
    const many: ChartInput = { labels: days(5), series: Array.from({ length: 9 }, (_, i) => ({ name: `Campaign number ${i}`, values: [i, 1, 2, 3, 4] })), unit: 'EUR' };
    const text = chart(many, { width: 60, height: 14 });
    const lines = text.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(14);
    for (const line of lines) expect(textWidth(line)).toBeLessThanOrEqual(60);
    for (let i = 0; i < 9; i++) expect(text).toContain(`${MARKS[i % MARKS.length]} Campaign number ${i}`);
  });
});

describe('edge cases', () => {
  it('all zero: a flat baseline, the tick 0 only, no bar and no NaN', () => {
    for (const kind of ['bars', 'line'] as const) {
      const text = chart(one([0, 0, 0, 0]), { kind });
      const { rows, axis, lines } = parse(text);
      expect(text).not.toMatch(/NaN|Infinity/);
      expect(rows.flat().every((ch) => ch === ' ')).toBe(true);
      expect(lines.filter((line) => /[┤└]/.test(line)).map((line) => line.trim().split(' ')[0])).toEqual(['0']);
      expect(axis.join('')).toMatch(kind === 'bars' ? /^─+$/ : /^●[─●]+$/);
    }
    // not a number is drawn as nothing
    expect(chart(one([Number.NaN, Number.POSITIVE_INFINITY, 0]))).toBe(chart(one([0, 0, 0])));
  });

  it('a single bucket: one bar of the whole height, its label', () => {
    const text = chart(one([42.5]), { height: 8 });
    const { rows, labels } = parse(text);
    expect(rows).toHaveLength(5);
    expect(runs(rows.at(-1)!)).toEqual([0]);
    expect(barHeight(rows, 0)).toBe(5 * 8);
    expect(labels.trim()).toBe('2024-01-01');
    expect(text).toContain('42.5 ┤');
  });

  it('more buckets than columns: averaged into the columns, every line within the width', () => {
    // a year by day; day 100 alone is 3650, the others 10
    const labels = days(366);
    const values = labels.map((_, i) => (i === 100 ? 3650 : 10));
    const text = chart(one(values, labels), { width: 60, height: 10 });
    const { rows, labels: line, at } = parse(text);
    for (const l of text.split('\n')) expect(textWidth(l)).toBeLessThanOrEqual(60);
    const columns = 60 - at;
    expect(rows[0]!.length).toBeLessThanOrEqual(columns);
    // each column the mean of 6-7 days: the spike's column is (3650 + 5 * 10) / 6 or (3650 + 6 * 10) / 7, the top
    const heights = rows[0]!.map((_, c) => barHeight(rows, c));
    const top = Math.max(...heights);
    expect(top).toBe(rows.length * 8);
    expect(heights.filter((h) => h === top)).toHaveLength(1);
    expect(heights.filter((h) => h > 0 && h < top).every((h) => h === 1)).toBe(true);
    expect(line).toContain('2024-01-01');
    expect(line).toContain('2024-12-31');
    expect(squeeze([1, 2, 3, 4, 5, 6], 3)).toEqual([1.5, 3.5, 5.5]);
    expect(squeeze([1, 2, 3, 4, 5, 6, 7], 3)).toEqual([1.5, 3.5, 6]);
  });

  it('a terminal too small: nothing (the caller prints the table alone)', () => {
    // the y labels take 4 columns ("3.00" at most), the axis 2
    const input = one([1, 2, 3]);
    const smallest = chart(input, { width: 6 + MIN_PLOT_COLUMNS, height: 3 + MIN_PLOT_ROWS });
    expect(smallest).not.toBe('');
    expect(smallest.trimEnd().split('\n')).toHaveLength(3 + MIN_PLOT_ROWS);
    for (const line of smallest.split('\n')) expect(textWidth(line)).toBeLessThanOrEqual(6 + MIN_PLOT_COLUMNS);
    expect(chart(input, { width: 5 + MIN_PLOT_COLUMNS })).toBe('');
    expect(chart(input, { height: 2 + MIN_PLOT_ROWS })).toBe('');
    expect(chart(input, { width: 0, height: 0 })).toBe('');
    expect(chart({ labels: [], series: [{ name: 'x', values: [] }], unit: 'EUR' })).toBe('');
    expect(chart({ labels: ['a'], series: [], unit: 'EUR' })).toBe('');
  });

  it('hostile names and labels: no control, no bidi override, cut by display width, wide characters counted twice', () => {
    const hostile: ChartInput = {
      labels: ['\x1b]0;pwned\x07day', '\u202eyad', '二〇二四年三月一日', '\u009b2Jday'],
      series: [
        { name: 'Spring\x1b[2J sale\x1b]8;;https://evil.example/\x07link', values: [1, 2, 3, 4] },
        { name: '\u202eelas retniW\u2066x\u2069', values: [4, 3, 2, 1] },
        { name: '𠮷野家の春セール'.repeat(5), values: [2, 2, 2, 2] },
      ],
      unit: '円\x1b[31m',
    };
    for (const color of [plain, colour]) {
      for (const width of [40, 80]) {
        const text = chart(hostile, { color, width, height: 14 });
        expect(text).not.toBe('');
        const visible = strip(text);
        expect(visible).not.toMatch(RAW);
        // the only escape codes are the chart's own colours
        expect(text.replace(SGR, '')).not.toContain('\x1b');
        for (const line of visible.split('\n')) expect(textWidth(line)).toBeLessThanOrEqual(width);
        expect(visible).toContain('𠮷野家');
        expect(visible).not.toContain('𠮷野家の春セール'.repeat(5));
        expect(visible).toContain('\ufffd');
      }
    }
  });

  it('takes half a terminal\'s lines above the table, 8 to 20', () => {
    expect([undefined, 0, Number.NaN, 10, 24, 30, 60].map(chartHeight)).toEqual([12, 12, 12, 8, 12, 15, 20]);
  });

  it('is deterministic and leaves its input as it was', () => {
    const input = one([5, 1, 4, 1, 5, 9, 2, 6]);
    const copy = structuredClone(input);
    expect(chart(input, { color: colour })).toBe(chart(input, { color: colour }));
    expect(input).toEqual(copy);
  });
});

describe("a trend's buckets as a chart's input", () => {
  const bucket = (label: string, amount: number, series?: string, seriesName?: string) =>
    ({ bucket: label, conversionsAmountWTax: amount, conversionsNumber: 1, referenceCurrency: 'CZK', ...(series ? { series, seriesName } : {}) }) as unknown as TrendBucket;

  it('one series of the whole plugin, labels in the buckets\' order, the reference currency as the unit', () => {
    expect(trendChartInput([bucket('2024-03-01', 10), bucket('2024-03-02', 0), bucket('2024-03-03', 2.5)])).toEqual({
      labels: ['2024-03-01', '2024-03-02', '2024-03-03'],
      series: [{ name: 'Revenue', values: [10, 0, 2.5] }],
      unit: 'CZK',
    });
  });

  it('a series per source, named by seriesName, 0 where a series lacks a bucket, any figure', () => {
    const buckets = [bucket('W1', 1, 'campaign:k1', 'Spring'), bucket('W1', 2, 'other', 'other'), bucket('W2', 3, 'campaign:k1', 'Spring')];
    expect(trendChartInput(buckets)).toEqual({
      labels: ['W1', 'W2'],
      series: [
        { name: 'Spring', values: [1, 3] },
        { name: 'other', values: [2, 0] },
      ],
      unit: 'CZK',
    });
    expect(trendChartInput(buckets, (b) => b.conversionsNumber).series.map((s) => s.values)).toEqual([
      [1, 1],
      [1, 0],
    ]);
    expect(trendChartInput([])).toEqual({ labels: [], series: [], unit: '' });
  });
});

describe('sparklines', () => {
  it('eighth blocks from nothing to the largest value, all zero the lowest', () => {
    expect(sparkline([0, 1, 2, 4, 8])).toBe('▁▂▃▅█');
    expect(sparkline([0, 0, 0])).toBe('▁▁▁');
    expect(sparkline([])).toBe('');
    // anything above nothing is above the lowest block
    expect(sparkline([0, 0.01, 1000])).toBe('▁▂█');
    expect(sparkline([-5, 3])).toBe('▁█');
  });

  it('a width cuts by averaging neighbouring values, never stretches', () => {
    expect(sparkline([0, 0, 8, 8], 2)).toBe('▁█');
    expect(sparkline([0, 8, 8, 8], 2)).toBe('▅█');
    expect(sparkline([1, 2, 3], 10)).toHaveLength(3);
    expect([...sparkline(Array.from({ length: 365 }, (_, i) => i), 32)]).toHaveLength(32);
  });
});

describe("the report table's trend column", () => {
  const rows = [
    { id: 'k1', name: 'Spring', source: { type: 'campaign' }, conversionsNumber: 3, conversionsAmountWTax: 300, referenceCurrency: 'EUR' },
    { id: 'k2', name: 'Winter', source: { type: 'campaign' }, conversionsNumber: 1, conversionsAmountWTax: 50, referenceCurrency: 'EUR' },
    { id: 'a1', name: 'Welcome', source: { type: 'automation' }, conversionsNumber: 0, conversionsAmountWTax: 0, referenceCurrency: 'EUR' },
  ];
  const columns = ['name', 'source.type', 'conversionsNumber', 'conversionsAmountWTax'];
  const daily = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));
  const sparklines = new Map([
    ['campaign:k1', daily(31, (i) => i)],
    ['campaign:k2', daily(31, (i) => 31 - i)],
  ]);
  const without = (width?: number) => layoutTable(rows, columns, plain, { totals: true, ...(width !== undefined ? { width } : {}) }).text;
  const naturalWidth = textWidth(without().split('\n')[0]!);

  it('shows each source its sparkline when the table fits whole beside 16 blocks', () => {
    const width = naturalWidth + 3 + 31;
    const { text, hidden } = layoutTable(rows, columns, plain, { totals: true, width, sparklines });
    expect(hidden).toEqual([]);
    const lines = text.trimEnd().split('\n');
    expect(lines[1]).toMatch(/│ Trend\s+│$/);
    expect(lines.find((l) => l.includes('Spring'))).toContain(sparkline(sparklines.get('campaign:k1')!));
    expect(lines.find((l) => l.includes('Winter'))).toContain(sparkline(sparklines.get('campaign:k2')!));
    // a source without values, and the totals row: an empty cell
    expect(lines.find((l) => l.includes('Welcome'))).toMatch(/│\s+│$/);
    expect(lines.find((l) => l.includes('Total'))).toMatch(/│\s+│$/);
    for (const line of lines) expect(textWidth(line)).toBeLessThanOrEqual(width);
    // the table's own columns are as they were
    expect(lines.map((l) => l.replace(/│[^│]*│$/, '│').replace(/┬─+┐$|┼─+┤$|┴─+┘$/, (m) => m[0]! === '┬' ? '┐' : m[0]! === '┼' ? '┤' : '┘'))).toEqual(without().trimEnd().split('\n'));
  });

  it('takes at most SPARK_MAX blocks, averaging a long period', () => {
    const year = new Map([['campaign:k1', daily(366, (i) => i % 30)]]);
    const { text } = layoutTable(rows, columns, plain, { width: naturalWidth + 100, sparklines: year });
    const spark = text.split('\n').find((l) => l.includes('Spring'))!.match(/[▁▂▃▄▅▆▇█]+/)![0];
    expect([...spark]).toHaveLength(SPARK_MAX);
  });

  it('is left out, the table unchanged, when it does not fit, without a width, or without data', () => {
    for (const width of [naturalWidth + 3 + SPARK_MIN - 1, naturalWidth, 60, 40]) {
      expect(layoutTable(rows, columns, plain, { totals: true, width, sparklines }).text, `width ${width}`).toBe(without(width));
    }
    expect(layoutTable(rows, columns, plain, { totals: true, sparklines }).text).toBe(without());
    expect(layoutTable(rows, columns, plain, { totals: true, width: 200, sparklines: new Map() }).text).toBe(without(200));
    // 16 blocks fit: shown
    expect(layoutTable(rows, columns, plain, { totals: true, width: naturalWidth + 3 + SPARK_MIN, sparklines }).text).toContain('Trend');
    // a short period needs a block per day only
    const week = new Map([['campaign:k1', daily(7, (i) => i)]]);
    expect(layoutTable(rows, columns, plain, { totals: true, width: naturalWidth + 3 + 7, sparklines: week }).text).toContain(sparkline(daily(7, (i) => i)));
  });

  it('shows once per source on --breakdown lines', () => {
    const lines = [rows[0], { ...rows[0], breakdown: { currency: 'CZK' } }, rows[1]];
    const { text } = layoutTable(lines, columns, plain, { width: 200, sparklines });
    expect(text.split(sparkline(sparklines.get('campaign:k1')!)).length - 1).toBe(1);
  });

  it('the writer: a table on a terminal gets it, every other format and --fields do not change', async () => {
    const kind = { columns, tableColumns: columns, objectFields: [] };
    const write = async (format: 'table' | 'tsv' | 'json' | 'csv', extras?: { sparklines: Map<string, number[]> }, fields?: string[]) => {
      let text = '';
      const sink = { write: async (t: string) => void (text += t), flush: async () => undefined, columns: () => 200 };
      const writer = new ResultWriter(sink, { format, chalk: plain, ...(fields ? { fields } : {}) });
      await writer.page(kind, { rows, paging: { start: 0, count: 3, totalCount: 3 } }, extras);
      return { text, width: writer.tableWidth() };
    };
    const table = await write('table', { sparklines });
    expect(table.text).toContain('Trend');
    expect(table.width).toBe(200);
    for (const format of ['tsv', 'json', 'csv'] as const) {
      const other = await write(format, { sparklines });
      expect(other.text).toBe((await write(format)).text);
      expect(other.width).toBeUndefined();
    }
    expect((await write('table', { sparklines }, ['name'])).text).not.toContain('Trend');
    const wide = new ResultWriter({ write: async () => undefined, flush: async () => undefined, columns: () => 200 }, { format: 'table', chalk: plain, wide: true });
    expect(wide.tableWidth()).toBeUndefined();
  });
});
