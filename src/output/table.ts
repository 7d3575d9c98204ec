/**
 * Terminal tables, pure: records, columns and a width in, text out.
 *
 * - Fits a width: names and links are shortened with an ellipsis (never wrapped), and
 *   when even that is not enough columns are left out: first those `dropFirst` names, in its
 *   order (the items' timestamp before what identifies a conversion), then from the right,
 *   keeping the first, a series' name, the first money column and the first reference amount
 *   (`hidden` says which).
 * - Money columns carry their currency in the header ("Revenue (EUR)") when every row
 *   agrees on it; rows in several currencies show it in their own column (Cur).
 * - With `totals`, rows that cover several sources close with a totals row (one per
 *   currency, then the reference total, when the rows are per source and currency).
 */
import type { ChalkInstance } from 'chalk';
import { changeTenths } from '../model/compare.js';
import { changeFigure, COLUMN_TITLES, currencyColumn, getPath, isAdditiveColumn, isAmountColumn, isShrinkableColumn } from './columns.js';
import { tableCell } from './format.js';
import { sparkline } from './sparkline.js';
import { fit, safeValue, textWidth } from './terminal.js';

export interface TableOptions {
  titles?: Record<string, string>;
  /** The terminal's width in characters; undefined: every column at its full width (--wide, pipes). */
  width?: number;
  /** Close with totals when the rows cover several sources. */
  totals?: boolean;
  /** The label of the totals rows; default "Total". */
  totalLabel?: string;
  /**
   * A trend column (TREND_COLUMN, titled "Trend") at the right end: a sparkline of each row's
   * values, by the row's source key (sourceKey: `campaign:k-1`, as a trend series is named),
   * e.g. the source's revenue per day of the period. Only with a `width` (a terminal) and when
   * the table fits it whole beside a column of at least SPARK_MIN blocks (or one per value,
   * when fewer): else the table is as without it. A key without values gets an empty cell;
   * --breakdown's lines of one source show it on the first.
   */
  sparklines?: ReadonlyMap<string, readonly number[]>;
  /**
   * Columns left out first when the table does not fit, in this order, before any other leaves
   * from the right (the first column too, when named here). Default: none, only from the right.
   */
  dropFirst?: readonly string[];
}

/** The trend column's key among the columns (never a field of a record). */
export const TREND_COLUMN = '\u0000trend';
/** A trend column shows when it can take this many blocks (or one per value, when fewer) ... */
export const SPARK_MIN = 16;
/** ... and takes at most this many (more values are averaged: sparkline.ts). */
export const SPARK_MAX = 32;

export interface TableLayout {
  text: string;
  /** Titles of the columns left out to fit the width, in column order. */
  hidden: string[];
}

/** A shortened name keeps at least this many characters (or its title's, or its whole text). */
const MIN_SHRUNK = 16;
/** ... and at least this many when otherwise the name, the revenue or the currency would go. */
const LAST_RESORT = 8;

interface Cell {
  text: string;
  right: boolean;
  negative: boolean;
  /** A change column's direction: green up, red down (with colour on). */
  tone?: 'up' | 'down';
}

type Row = { cells: Cell[]; total: boolean };

export function renderTable(records: unknown[], columns: string[], chalk: ChalkInstance, options: TableOptions = {}): string {
  return layoutTable(records, columns, chalk, options).text;
}

export function layoutTable(records: unknown[], columns: string[], chalk: ChalkInstance, options: TableOptions = {}): TableLayout {
  const trend = withTrend(records, columns, chalk, options);
  return trend ? layoutColumns(trend.records, [...columns, TREND_COLUMN], chalk, trend.options) : layoutColumns(records, columns, chalk, options);
}

/**
 * The records and options of a table with its trend column, or undefined when it has none: no
 * sparklines, no width, or the table at its full width leaves less than the column needs.
 */
function withTrend(records: unknown[], columns: string[], chalk: ChalkInstance, options: TableOptions): { records: unknown[]; options: TableOptions } | undefined {
  const { sparklines, width, ...rest } = options;
  if (!sparklines?.size || width === undefined || width <= 0 || !records.length) return undefined;
  const title = 'Trend';
  const longest = Math.max(...[...sparklines.values()].map((values) => values.length));
  const full = layoutColumns(records, columns, chalk, rest).text;
  // the column takes its blocks, two spaces and a rule
  const room = width - textWidth(full.slice(0, full.indexOf('\n'))) - 3;
  if (longest === 0 || room < Math.max(title.length, Math.min(SPARK_MIN, longest))) return undefined;
  const blocks = Math.min(SPARK_MAX, longest, room);
  const seen = new Set<string>();
  const shown = records.map((record) => {
    const key = sourceKey(record);
    const values = key === undefined || seen.has(key) ? undefined : sparklines.get(key);
    if (key !== undefined) seen.add(key);
    return { ...(record as object), [TREND_COLUMN]: values ? sparkline(values, blocks) : '' };
  });
  return { records: shown, options: { ...rest, width, titles: { ...(options.titles ?? COLUMN_TITLES), [TREND_COLUMN]: title } } };
}

/** A record's source key, `type:id` (`campaign:k-1`), or undefined when it has no id. */
export function sourceKey(record: unknown): string | undefined {
  const id = getPath(record, 'id');
  return id === undefined ? undefined : `${String(getPath(record, 'source.type'))}:${String(id)}`;
}

function layoutColumns(records: unknown[], columns: string[], chalk: ChalkInstance, options: TableOptions): TableLayout {
  const titles = columns.map((column) => columnTitle(records, column, options.titles ?? COLUMN_TITLES));
  const rows: Row[] = records.map((record) => ({ cells: columns.map((column) => cell(valueOf(record, column), column)), total: false }));
  if (options.totals) {
    for (const total of totalRows(records, columns, options.totalLabel ?? 'Total')) {
      rows.push({ cells: columns.map((column) => cell(total.get(column), column)), total: true });
    }
  }

  const natural = columns.map((_, i) => rows.reduce((max, row) => Math.max(max, textWidth(row.cells[i]!.text)), textWidth(titles[i]!)));
  // a shortened column keeps its title, MIN_SHRUNK characters and the totals' label whole
  const minimum = columns.map((column, i) =>
    isShrinkableColumn(column)
      ? Math.min(natural[i]!, rows.reduce((max, row) => (row.total ? Math.max(max, textWidth(row.cells[i]!.text)) : max), Math.max(textWidth(titles[i]!), MIN_SHRUNK)))
      : natural[i]!,
  );
  const lineWidth = (widths: number[]) => widths.reduce((sum, w) => sum + w + 3, 1);

  // columns leave in the order of dropFirst, then from the right, except those keptColumns names; then, if need be, those too
  const keep = keptColumns(columns, options.dropFirst);
  let visible = columns.map((_, i) => i);
  const widths = [...natural];
  if (options.width !== undefined && options.width > 0) {
    const available = options.width;
    const fits = () => lineWidth(visible.map((v) => minimum[v]!)) <= available;
    for (const i of dropOrder(columns, options.dropFirst)) {
      if (fits()) break;
      if (!keep.has(i)) visible = visible.filter((v) => v !== i);
    }
    // a very narrow terminal: names shrink further before a kept column goes
    if (!fits()) {
      columns.forEach((column, i) => {
        if (isShrinkableColumn(column)) minimum[i] = Math.min(natural[i]!, Math.max(textWidth(titles[i]!), LAST_RESORT));
      });
    }
    for (let i = columns.length - 1; i > 0 && !fits(); i--) visible = visible.filter((v) => v !== i);
    let excess = lineWidth(visible.map((v) => widths[v]!)) - available;
    while (excess > 0) {
      // the widest column that may still give a character
      let pick = -1;
      for (const i of visible) {
        if (widths[i]! > minimum[i]! && (pick === -1 || widths[i]! > widths[pick]!)) pick = i;
      }
      if (pick === -1) break;
      widths[pick]!--;
      excess--;
    }
  }

  const line = (left: string, mid: string, right: string) => `${left}${visible.map((i) => '─'.repeat(widths[i]! + 2)).join(mid)}${right}`;
  const out: string[] = [line('┌', '┬', '┐')];
  out.push(
    `│${visible
      .map((i) => {
        const title = fit(titles[i]!, widths[i]!);
        return ` ${chalk.bold(title)}${' '.repeat(widths[i]! - textWidth(title))} `;
      })
      .join('│')}│`,
  );
  let separated = false;
  for (const row of rows) {
    if (row.total && !separated) {
      out.push(line('├', '┼', '┤'));
      separated = true;
    }
    const cells = visible.map((i) => {
      const c = row.cells[i]!;
      const text = fit(c.text, widths[i]!);
      const pad = ' '.repeat(widths[i]! - textWidth(text));
      const shownText = c.tone ? (c.tone === 'up' ? chalk.green(text) : chalk.red(text)) : c.negative ? chalk.red(text) : row.total && !c.right ? chalk.bold(text) : text;
      return ` ${c.right ? pad + shownText : shownText + pad} `;
    });
    out.push(`│${cells.join('│')}│`);
  }
  out.push(line('└', '┴', '┘'));
  return { text: `${out.join('\n')}\n`, hidden: titles.filter((_, i) => !visible.includes(i)) };
}

/** A record's value of a column; a change column's is null where the comparison has no change (no other side). */
function valueOf(record: unknown, column: string): unknown {
  const figure = changeFigure(column);
  if (figure === undefined) return getPath(record, column);
  if (getPath(record, 'comparison.change') === null) return null;
  const change = getPath(record, column);
  // the other side's figure with it: the percentage shown is computed from the exact figures
  return change !== null && typeof change === 'object' ? { ...change, other: getPath(record, `comparison.figures.${figure}`) } : change;
}

/** A cell as a table shows it (a record's value of the column, or the value given): its text, made safe, and whether it is aligned right. */
export function tableText(record: unknown, column: string, value: unknown = valueOf(record, column)): { text: string; right: boolean } {
  const { text, right } = cell(value, column);
  return { text, right };
}

function cell(value: unknown, column: string): Cell {
  if (changeFigure(column) !== undefined && (value === null || typeof value === 'object')) return changeCell(value as ChangeValue | null);
  return {
    // a value from the data: one line, no control character a terminal would obey (terminal.ts)
    text: safeValue(tableCell(value, column)),
    right: typeof value === 'number',
    negative: typeof value === 'number' && value < 0,
  };
}

/**
 * The columns a narrow table keeps longest: the first, a series' name (a per-source series: its rows
 * differ by it alone), the first money column and the first amount in the reference currency (name,
 * revenue, and the revenue that adds up across currencies), with the column naming a kept amount's currency.
 */
function keptColumns(columns: readonly string[], dropFirst: readonly string[] = []): Set<number> {
  const money = [columns.findIndex((c) => isAmountColumn(c)), columns.findIndex((c) => isAmountColumn(c) && c.endsWith('Reference'))];
  const series = columns.flatMap((c, i) => (c === 'seriesName' ? [i] : []));
  const kept = [0, ...series, ...money, ...money.map((i) => columns.indexOf(currencyColumn(columns[i] ?? '') ?? ''))];
  return new Set(kept.filter((i) => !dropFirst.includes(columns[i] ?? '')));
}

/** The order columns leave in: those dropFirst names, in its order, then the others from the right (never the first of those). */
function dropOrder(columns: readonly string[], dropFirst: readonly string[] = []): number[] {
  const first = dropFirst.map((c) => columns.indexOf(c)).filter((i) => i >= 0);
  const rest = columns.map((_, i) => i).filter((i) => i > 0 && !first.includes(i));
  return [...first, ...rest.reverse()];
}

/** A change cell's value: a comparison's change of a figure, with the other side's figure. */
export interface ChangeValue {
  absolute?: unknown;
  relative?: unknown;
  other?: unknown;
}

/**
 * A change (a comparison's, --compare) as a table shows it: the relative change to a tenth of a
 * percent with a sign and an arrow (▲ +12.3 %, ▼ −4.0 %; ▲ <0.1 % for a change that rounds to
 * 0.0 %), `= 0 %` where the figures are equal, `new` where the other side is absent, `–` where the
 * other side is 0 (no relative change). Computed from the exact figures (changeTenths), not from
 * the rounded `relative`.
 */
export function changeText(change: ChangeValue | null): string {
  if (change === null) return 'new';
  const shown = shownChange(change);
  if (shown === null) return '–';
  if (shown.direction === 0) return '= 0 %';
  const percent = `${shown.tenths === 0n ? '<0.1' : percentOf(shown.tenths)} %`;
  return shown.direction > 0 ? `▲ ${shown.tenths === 0n ? '' : '+'}${percent}` : `▼ ${shown.tenths === 0n ? '' : '−'}${percent}`;
}

/**
 * A figure's change in a record as the html report's "Change %" shows it: "12.3 %", "-4.0 %",
 * "0 %" where equal, "<0.1 %" and "-<0.1 %" for a change that rounds to 0.0 % (undefined: no
 * relative change).
 */
export function changePercentText(record: unknown, figure: string): string | undefined {
  const value = valueOf(record, `comparison.change.${figure}`);
  const shown = value !== null && typeof value === 'object' ? shownChange(value as ChangeValue) : null;
  if (shown === null) return undefined;
  if (shown.direction === 0) return '0 %';
  return `${shown.direction < 0 ? '-' : ''}${shown.tenths === 0n ? '<0.1' : percentOf(shown.tenths)} %`;
}

function shownChange(change: ChangeValue): ReturnType<typeof changeTenths> {
  const { absolute, relative, other } = change;
  if (typeof relative !== 'number' || typeof absolute !== 'number' || typeof other !== 'number') return null;
  return changeTenths(absolute, other);
}

/** Whole tenths of a percent as a percent: 123n is "12.3". */
function percentOf(tenths: bigint): string {
  return `${tenths / 10n}.${tenths % 10n}`;
}

function changeCell(change: ChangeValue | null): Cell {
  const shown = change === null ? null : shownChange(change);
  const tone = shown && shown.direction !== 0 ? (shown.direction > 0 ? 'up' : 'down') : undefined;
  return { text: changeText(change), right: true, negative: false, ...(tone ? { tone } : {}) };
}

/** The header of a column: money columns name their currency when all rows agree on one. */
export function columnTitle(records: unknown[], column: string, titles: Record<string, string>): string {
  const title = safeValue(titles[column] ?? column);
  const currencyPath = currencyColumn(column);
  if (!currencyPath || records.length === 0) return title;
  const currencies = new Set(records.map((record) => getPath(record, currencyPath)));
  const [currency] = currencies;
  if (currencies.size !== 1 || typeof currency !== 'string' || currency === '') return title;
  return `${title.replace(/ \(ref\.\)$/, '')} (${safeValue(currency)})`;
}

/**
 * Totals of the additive columns, when the rows cover more than one source. Top-level
 * columns add up once per source (a --breakdown line repeats them); breakdown columns add
 * up per line: in one row per currency when there are several (only the reference amounts
 * then add up across currencies, in the last row).
 */
export function totalRows(records: unknown[], columns: string[], label: string): Map<string, unknown>[] {
  const keys = records.map((record, i) => sourceKey(record) ?? `#${i}`);
  const sources = new Set(keys);
  // one source, or no column that adds up (--fields name,source.detailUrl): nothing to total
  if (sources.size < 2 || !columns.some(isAdditiveColumn)) return [];
  const labelColumn = columns.find((c) => c === 'name') ?? columns.find((c) => !isAdditiveColumn(c) && !isAmountColumn(c) && c !== 'breakdown.currency');
  const seen = new Set<string>();
  const firstOfSource = records.filter((_, i) => !seen.has(keys[i]!) && seen.add(keys[i]!));
  const currencies = [...new Set(records.map((r) => getPath(r, 'breakdown.currency')).filter((c): c is string => typeof c === 'string'))].sort();
  const perCurrency = columns.includes('breakdown.currency') && currencies.length > 1;

  const row = (currency?: string): Map<string, unknown> => {
    const total = new Map<string, unknown>([['breakdown.currency', currency]]);
    if (labelColumn) total.set(labelColumn, label);
    return total;
  };
  const out: Map<string, unknown>[] = [];
  if (perCurrency) {
    for (const currency of currencies) {
      const lines = records.filter((r) => getPath(r, 'breakdown.currency') === currency);
      const total = row(currency);
      for (const column of columns) {
        if (column.startsWith('breakdown.') && isAdditiveColumn(column)) total.set(column, sum(lines, column));
      }
      out.push(total);
    }
  }
  const grand = row(currencies.length === 1 ? currencies[0] : undefined);
  for (const column of columns) {
    if (!isAdditiveColumn(column)) continue;
    if (!column.startsWith('breakdown.')) grand.set(column, sum(firstOfSource, column));
    else if (column.endsWith('Reference') || column.endsWith('Number') || currencies.length <= 1) grand.set(column, sum(records, column));
  }
  out.push(grand);
  return out;
}

/** A sum exact to the cent for money, plain for counts; undefined when no row has a number. */
function sum(records: unknown[], column: string): number | undefined {
  const values = records.map((r) => getPath(r, column)).filter((v): v is number => typeof v === 'number');
  if (!values.length) return undefined;
  if (!isAmountColumn(column)) return values.reduce((a, b) => a + b, 0);
  return values.reduce((a, b) => a + Math.round(b * 100), 0) / 100;
}

/** Measured and cut by the terminal's columns (terminal.ts); table.ts has exported them from the start. */
export { fit, textWidth };
