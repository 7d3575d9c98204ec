/**
 * Charts for a terminal, pure: buckets and series in, lines of text out (`convx trend` on a TTY).
 *
 * - One series: vertical bars of Unicode block elements, the top cell of a bar in eighths
 *   (▁▂▃▄▅▆▇█), so a bar is drawn to an eighth of a row; the largest value fills the height.
 * - Several series: a dot chart (kind 'line', the default), one mark per series and bucket,
 *   each series its own mark (● ◆ ▲ ■ ○ ◇ △ □) and colour; or grouped bars (kind 'bars'),
 *   one bar per series side by side, full cells of ▓ ▒ ░ for the second to fourth series
 *   when there is no colour. The first series' mark wins a cell two series fall on.
 * - A y axis with 3-5 ticks (and 0), figures as the tables write money (1,234.5: grouped,
 *   at most two decimals), the unit (the currency) above it; a tick labels the level of its
 *   row's top edge (a bar reaching that level fills the row).
 * - x labels thinned to a stride so that they never touch; the first and the last always
 *   shown (the last right-aligned to the end of the last bucket), cut to fit between them.
 * - More buckets than columns: consecutive buckets are AVERAGED into a column (squeeze in
 *   sparkline.ts): a column keeps the scale of one bucket; its label is its first bucket's.
 * - All zero: a flat baseline and the tick 0. Negative values: bars hang below a zero row.
 * - Too small (the plot under MIN_PLOT_ROWS rows or MIN_PLOT_COLUMNS columns): '' (the
 *   caller prints the table alone). Every line fits `width` columns, the whole `height` lines.
 *
 * Labels and series names are data: they pass through safeValue and are cut by display
 * width (terminal.ts). Without colour (a chalk of level 0, or false) no escape code is written.
 */
import type { ChalkInstance } from 'chalk';
import type { TrendBucket } from '../model/types.js';
import { drawable, EIGHTHS, squeeze, squeezeStarts } from './sparkline.js';
import { fit, safeValue, textWidth } from './terminal.js';

export interface ChartSeries {
  name: string;
  values: readonly number[];
}

export interface ChartInput {
  /** One label per bucket (2024-03-01, 2024-W09 ...); a series' values line up with them. */
  labels: readonly string[];
  series: readonly ChartSeries[];
  /** The unit of the values, written above the y axis (the currency: EUR). */
  unit: string;
}

export interface ChartOptions {
  /** Columns the chart may take (the terminal's width). */
  width: number;
  /** Lines the chart may take, legend and x labels included. */
  height: number;
  /** The formatters' chalk (level 0: no colour), or false for none. */
  color: ChalkInstance | false;
  /** Default: 'bars' for one series, 'line' (a dot chart) for several. */
  kind?: 'bars' | 'line';
}

export const MIN_PLOT_ROWS = 3;
export const MIN_PLOT_COLUMNS = 8;
/** A bar is at most this many columns wide (a few buckets on a wide terminal). */
const MAX_BAR = 6;
/** A legend entry's name, an x label and the unit are cut to these many columns. */
const MAX_NAME = 24;
const MAX_LABEL = 16;
const MAX_UNIT = 12;

const PALETTE = ['cyan', 'magenta', 'yellow', 'green', 'blue', 'red'] as const;
/** The marks of a dot chart's series (and of their legend). */
export const MARKS = ['●', '◆', '▲', '■', '○', '◇', '△', '□'] as const;
/** The full cells of grouped bars without colour, per series (the first is █). */
export const FILLS = ['█', '▓', '▒', '░'] as const;

/** A cell of the plot: its glyph and the series whose colour it takes (-1: the axis, none). */
interface Cell {
  ch: string;
  series: number;
}

type Paint = (text: string, series: number) => string;

/**
 * The lines a chart above a table takes on a terminal of `rows` lines (its `rows`, else $LINES;
 * undefined: 24): half of them, between 8 and 20, so that the table's first rows show too.
 */
export function chartHeight(rows: number | undefined): number {
  const lines = rows !== undefined && Number.isFinite(rows) && rows > 0 ? Math.floor(rows) : 24;
  return Math.min(20, Math.max(8, Math.floor(lines / 2)));
}

let moneyFormats: { short: Intl.NumberFormat; cents: Intl.NumberFormat } | undefined;
function formats() {
  return (moneyFormats ??= {
    short: new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 }),
    cents: new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
  });
}

/** A tick's figure: grouped, at most two decimals, never "-0". */
export function tickText(value: number): string {
  return formats().short.format(value + 0 === 0 ? 0 : value);
}

/** An axis's ticks (tickText), each but 0 with as many decimals as the one that needs the most: 65.10 above 50.63. */
export function tickTexts(values: readonly number[]): string[] {
  const texts = values.map(tickText);
  const decimals = Math.max(...texts.map((t) => (t.includes('.') ? t.length - t.indexOf('.') - 1 : 0)));
  if (decimals === 0) return texts;
  const fixed = new Intl.NumberFormat('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return texts.map((text, i) => (text === '0' ? text : fixed.format(values[i]!)));
}

export function renderChart(input: ChartInput, options: ChartOptions): string {
  const n = input.labels.length;
  const k = input.series.length;
  if (n === 0 || k === 0) return '';
  const color = options.color !== false && options.color.level > 0 ? options.color : undefined;
  const kind = options.kind ?? (k > 1 ? 'line' : 'bars');
  const series = input.series.map((s) => Array.from({ length: n }, (_, i) => drawable(s.values[i] ?? 0)));
  const unit = fit(safeValue(input.unit), MAX_UNIT);
  // the y labels' width: bounded by the largest figure with its cents (averaging only shrinks
  // values; with negative values a tick may reach minus the largest magnitude)
  const all = series.flat();
  const largest = all.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const yWidth = Math.max(textWidth(unit), formats().cents.format(all.some((v) => v < 0) ? -largest : largest).length);
  const plotWidth = Math.floor(options.width) - yWidth - 2;
  const legend = k > 1 ? legendLines(input.series, options.width - yWidth - 2, kind, color) : [''];
  const rows = Math.floor(options.height) - legend.length - 2;
  if (plotWidth < MIN_PLOT_COLUMNS || rows < MIN_PLOT_ROWS) return '';
  const labelWidth = input.labels.reduce((m, label) => Math.max(m, textWidth(fit(safeValue(label), MAX_LABEL))), 0);
  const x = layoutX(n, plotWidth, kind === 'bars' ? k : 1, labelWidth);
  if (x.columns < 1) return '';
  const shown = series.map((values) => squeeze(values, x.columns));
  const y = scaleY(shown.flat(), rows);
  const grid = kind === 'bars' ? drawBars(shown, x, y, color === undefined) : drawDots(shown, x, y);
  const paint: Paint = (text, i) => (!color ? text : i < 0 ? color.dim(text) : color[PALETTE[i % PALETTE.length]!](text));
  const labels = xLabels(input.labels, x);
  const lines = [
    `${' '.repeat(yWidth - textWidth(unit))}${unit}  ${legend[0]}`,
    ...legend.slice(1).map((line) => `${' '.repeat(yWidth + 2)}${line}`),
    ...grid.map((cells, row) => {
      const level = rows - row;
      const tick = y.ticks.get(level);
      const axis = level === 0 ? '└' : tick !== undefined ? '┤' : '│';
      return `${(tick ?? '').padStart(yWidth)} ${paint(axis, -1)}${paintCells(cells, paint)}`;
    }),
    `${' '.repeat(yWidth + 2)}${labels}`,
  ];
  return `${lines.map((line) => line.trimEnd()).join('\n')}\n`;
}

interface XLayout {
  /** Columns the plot may take. */
  width: number;
  /** Columns (groups of buckets) drawn: n, or fewer when buckets are averaged together. */
  columns: number;
  /** The bucket each drawn column begins with. */
  starts: number[];
  /** Width of one series' bar. */
  bar: number;
  /** Columns from one drawn bucket's start to the next's (bars and a gap). */
  slot: number;
}

/**
 * Where the buckets go across `width` columns, `per` columns of marks each (a group of bars,
 * or 1): with room, bars up to MAX_BAR wide and buckets spread apart so that every label fits.
 */
function layoutX(n: number, width: number, per: number, labelWidth: number): XLayout {
  if (n * (per + 1) <= width) {
    const bar = Math.min(MAX_BAR, Math.floor((Math.floor(width / n) - 1) / per));
    const slot = Math.min(Math.floor(width / n), Math.max(bar * per + 1, labelWidth + 1));
    return { width, columns: n, starts: squeezeStarts(n, n), bar, slot };
  }
  const columns = Math.min(n, Math.floor(width / per));
  return { width, columns, starts: squeezeStarts(n, columns), bar: 1, slot: per };
}

interface YScale {
  /** Rows of the plot (the axis line apart). */
  rows: number;
  /** Rows below the zero level (negative values); 0 when none. */
  zero: number;
  /** Value of one row; 0 when every value is 0. */
  unit: number;
  /** Tick labels by level: 0 is the axis line, r the top edge of row r (from the bottom). */
  ticks: Map<number, string>;
}

/** The scale: the largest value (or the lowest) reaches the edge of the plot; 3-5 ticks. */
function scaleY(values: number[], rows: number): YScale {
  const hi = Math.max(0, ...values);
  const lo = Math.min(0, ...values);
  if (hi === lo) return { rows, zero: 0, unit: 0, ticks: new Map([[0, tickText(0)]]) };
  const zero = lo === 0 ? 0 : hi === 0 ? rows : Math.min(rows - 1, Math.max(1, Math.round((-lo / (hi - lo)) * rows)));
  const unit = Math.max(zero < rows ? hi / (rows - zero) : 0, zero > 0 ? -lo / zero : 0);
  const steps = rows >= 8 ? 4 : rows >= 6 ? 3 : 2;
  const levels = new Set(Array.from({ length: steps + 1 }, (_, i) => Math.round((rows * i) / steps)));
  if (zero > 0) {
    for (const level of levels) if (Math.abs(level - zero) <= 1) levels.delete(level);
    levels.add(zero);
  }
  const sorted = [...levels].sort((a, b) => a - b);
  const texts = tickTexts(sorted.map((level) => (level - zero) * unit));
  const ticks = new Map(sorted.map((level, i) => [level, texts[i]!]));
  return { rows, zero, unit, ticks };
}

/** An empty plot: rows + 1 lines (the last the axis) of `width` cells. */
function emptyGrid(rows: number, width: number): Cell[][] {
  return Array.from({ length: rows + 1 }, (_, row) => Array.from({ length: width }, () => ({ ch: row === rows ? '─' : ' ', series: -1 })));
}

/** The glyph of row `level` (1 = the lowest row) of a bar whose value stands `height` rows above the bottom. */
function barGlyph(level: number, height: number, zero: number, full: string): string {
  if (height >= zero) {
    if (level <= zero) return ' ';
    let eighths = Math.round(Math.min(1, Math.max(0, height - (level - 1))) * 8);
    // anything above nothing shows in the first row above zero
    if (eighths === 0 && level === zero + 1 && height > zero) eighths = 1;
    return eighths === 0 ? ' ' : eighths === 8 ? full : EIGHTHS[eighths - 1]!;
  }
  if (level > zero) return ' ';
  // below zero, hanging from the zero level: upper blocks (an eighth, a half, full)
  const eighths = Math.round(Math.min(1, Math.max(0, level - height)) * 8);
  if (eighths === 0) return level === zero ? '▔' : ' ';
  return eighths <= 2 ? '▔' : eighths <= 6 ? '▀' : full;
}

function drawBars(series: number[][], x: XLayout, y: YScale, plain: boolean): Cell[][] {
  const grid = emptyGrid(y.rows, x.columns * x.slot);
  series.forEach((values, s) => {
    const full = plain ? FILLS[s % FILLS.length]! : '█';
    values.forEach((value, j) => {
      const height = y.unit === 0 ? y.zero : value / y.unit + y.zero;
      for (let level = 1; level <= y.rows; level++) {
        const ch = barGlyph(level, height, y.zero, full);
        if (ch === ' ') continue;
        for (let c = 0; c < x.bar; c++) grid[y.rows - level]![j * x.slot + s * x.bar + c] = { ch, series: s };
      }
    });
  });
  return grid;
}

/** A mark per series and bucket at the level nearest its value (level 0: on the axis line); the first series on top. */
function drawDots(series: number[][], x: XLayout, y: YScale): Cell[][] {
  const grid = emptyGrid(y.rows, x.columns * x.slot);
  for (let s = series.length - 1; s >= 0; s--) {
    series[s]!.forEach((value, j) => {
      const level = y.unit === 0 ? y.zero : Math.min(y.rows, Math.max(0, Math.round(value / y.unit + y.zero)));
      grid[y.rows - level]![j * x.slot] = { ch: MARKS[s % MARKS.length]!, series: s };
    });
  }
  return grid;
}

/** The cells as text, one colour code per run of a series' cells. */
function paintCells(cells: Cell[], paint: Paint): string {
  let out = '';
  for (let i = 0; i < cells.length; ) {
    let j = i;
    let run = '';
    while (j < cells.length && cells[j]!.series === cells[i]!.series) run += cells[j++]!.ch;
    out += run.trim() === '' ? run : paint(run, cells[i]!.series);
    i = j;
  }
  return out;
}

/**
 * The x labels' line: each label under the start of its bucket, the last moved left if need
 * be to end within the plot; the first and the last always, others at a stride, never touching.
 */
function xLabels(labels: readonly string[], x: XLayout): string {
  const lastColumn = (x.columns - 1) * x.slot;
  const max = Math.max(1, Math.min(MAX_LABEL, x.columns > 1 ? Math.min(lastColumn - 1, Math.floor((x.width - 1) / 2)) : x.width));
  const text = (i: number) => fit(safeValue(labels[i]!), max);
  const first = text(0);
  if (x.columns === 1) return first;
  const last = text(labels.length - 1);
  const lastStart = Math.min(lastColumn, x.width - textWidth(last));
  let line = first;
  const widest = Math.max(...x.starts.map((i) => textWidth(text(i))));
  const stride = Math.max(1, Math.ceil((widest + 1) / x.slot));
  for (let j = stride; j < x.columns - 1; j += stride) {
    const label = text(x.starts[j]!);
    const at = j * x.slot;
    if (at >= textWidth(line) + 1 && at + textWidth(label) + 1 <= lastStart) line += ' '.repeat(at - textWidth(line)) + label;
  }
  return line + ' '.repeat(Math.max(1, lastStart - textWidth(line))) + last;
}

/** The legend: a mark (or fill) and each series' name, in lines of `width` columns. */
function legendLines(series: readonly ChartSeries[], width: number, kind: 'bars' | 'line', color: ChalkInstance | undefined): string[] {
  const lines: string[] = [];
  let line = '';
  let used = 0;
  series.forEach((s, i) => {
    const mark = kind === 'line' ? MARKS[i % MARKS.length]! : color ? '█' : FILLS[i % FILLS.length]!;
    const name = fit(safeValue(s.name), Math.max(1, Math.min(MAX_NAME, width - 2)));
    const entryWidth = textWidth(name) + 2;
    const entry = `${mark} ${name}`;
    const shown = color ? color[PALETTE[i % PALETTE.length]!](entry) : entry;
    if (used > 0 && used + 2 + entryWidth > width) {
      lines.push(line);
      line = '';
      used = 0;
    }
    line += used > 0 ? `  ${shown}` : shown;
    used += (used > 0 ? 2 : 0) + entryWidth;
  });
  lines.push(line);
  return lines;
}

/**
 * A chart's input from a trend's buckets (`convx trend`, GET /v1/conversions/timeframes): one
 * label per bucket in their order, one series per `series` (per source, named by seriesName;
 * a single unnamed series otherwise, named `name`), a figure of each bucket (default the
 * revenue, conversionsAmountWTax; 0 where a series lacks a bucket), in the reference currency.
 */
export function trendChartInput(
  buckets: readonly TrendBucket[],
  figure: (bucket: TrendBucket) => number = (bucket) => bucket.conversionsAmountWTax,
  name = 'Revenue',
): ChartInput {
  const labels = [...new Set(buckets.map((b) => b.bucket))];
  const index = new Map(labels.map((label, i) => [label, i]));
  const series = new Map<string, ChartSeries & { values: number[] }>();
  for (const bucket of buckets) {
    const key = bucket.series ?? '';
    let s = series.get(key);
    if (!s) series.set(key, (s = { name: bucket.series === undefined ? name : (bucket.seriesName ?? bucket.series), values: labels.map(() => 0) }));
    s.values[index.get(bucket.bucket)!] = figure(bucket);
  }
  return { labels, series: [...series.values()], unit: buckets[0]?.referenceCurrency ?? '' };
}
