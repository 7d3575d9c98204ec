/**
 * Inline SVG charts of a page to share (output/html.ts): pure text, no script, no URL (not even
 * an xmlns, which HTML does not need), the same bytes for the same figures. Every label is
 * HTML-escaped here; shapes are drawn in greys and patterns that stay readable in black and white.
 */
import { tickText } from './chart.js';
import { escapeHtml } from './escape.js';

export interface Bar {
  label: string;
  value: number;
}

export interface Series {
  name: string;
  values: readonly number[];
}

/** Dash patterns of the series of a line chart (distinct without colour), then their colours. */
const DASHES = ['', '6 3', '2 3', '10 3 2 3', '1 2', '12 4'];
const COLOURS = ['#1f4e79', '#b8470b', '#2e7d32', '#6a1b9a', '#455a64', '#8d6e00'];

/** A coordinate as text: one decimal, no "-0". */
const at = (n: number): string => {
  const text = (Math.round(n * 10) / 10).toFixed(1).replace(/\.0$/, '');
  return text === '-0' ? '0' : text;
};


/** Round ticks from 0 (or the lowest value below 0) to at least the highest value: steps of 1, 2 or 5 times a power of ten. */
export function niceTicks(low: number, high: number, target = 5): number[] {
  const lo = Math.min(0, low);
  const hi = Math.max(0, high);
  if (hi === lo) return [0, 1];
  const rough = (hi - lo) / target;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough)!;
  const ticks: number[] = [];
  for (let t = Math.floor(lo / step) * step; t < hi + step; t += step) {
    // no 0.30000000000000004: a tick is a multiple of the step, rounded as the step is
    ticks.push(Number((Math.round(t / step) * step).toPrecision(12)));
    if (t >= hi) break;
  }
  return ticks;
}

/** A label cut to a number of characters, with an ellipsis. */
function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/**
 * Horizontal bars, one per label, in the order given, the value written at the end of each bar;
 * `title` names the figure and its unit (the axis' caption). Negative values extend to the left of 0.
 */
export function horizontalBars(title: string, bars: Bar[], valueText: (n: number) => string): string {
  const rowHeight = 22;
  const labelWidth = 190;
  const plotWidth = 560;
  const top = 30;
  const height = top + bars.length * rowHeight + 30;
  const ticks = niceTicks(Math.min(...bars.map((b) => b.value)), Math.max(...bars.map((b) => b.value)));
  const [first, last] = [ticks[0]!, ticks.at(-1)!];
  const x = (v: number) => labelWidth + ((v - first) / (last - first)) * plotWidth;
  const parts = [
    `<svg class="chart" role="img" aria-label="${escapeHtml(title)}" viewBox="0 0 ${labelWidth + plotWidth + 90} ${height}" width="100%" font-size="12">`,
    `<text x="${labelWidth}" y="16" font-weight="bold">${escapeHtml(title)}</text>`,
  ];
  const bottom = top + bars.length * rowHeight;
  for (const tick of ticks) {
    parts.push(`<line x1="${at(x(tick))}" y1="${top - 4}" x2="${at(x(tick))}" y2="${bottom}" stroke="#bbb" stroke-width="${tick === 0 ? 1.5 : 0.5}"/>`);
    parts.push(`<text x="${at(x(tick))}" y="${bottom + 16}" text-anchor="middle" fill="#333">${escapeHtml(tickText(tick))}</text>`);
  }
  bars.forEach((bar, i) => {
    const y = top + i * rowHeight;
    const [from, to] = [x(Math.min(0, bar.value)), x(Math.max(0, bar.value))];
    parts.push(`<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escapeHtml(cut(bar.label, 28))}</text>`);
    parts.push(`<rect x="${at(from)}" y="${y + 3}" width="${at(Math.max(to - from, 0.5))}" height="${rowHeight - 6}" fill="${COLOURS[0]}" stroke="#000" stroke-width="0.5"/>`);
    parts.push(`<text x="${at(to + 6)}" y="${y + 15}" fill="#000">${escapeHtml(valueText(bar.value))}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** The labels of a time axis that fit: every nth, about 12 in all, the first always. */
function axisLabelEvery(count: number): number {
  return Math.max(1, Math.ceil(count / 12));
}

/**
 * A chart of series over the same labels (a series' buckets): columns for one series, a line per
 * series for several (each its dash pattern and colour, with a legend). The y axis has round
 * ticks, `unit` its caption (the currency).
 */
export function seriesChart(title: string, unit: string, labels: readonly string[], series: readonly Series[]): string {
  const [left, top, plotWidth, plotHeight] = [70, 30 + Math.ceil(series.length / 3) * 18 * (series.length > 1 ? 1 : 0), 780, 260];
  const values = series.flatMap((s) => s.values);
  const ticks = niceTicks(Math.min(0, ...values), Math.max(0, ...values));
  const [first, last] = [ticks[0]!, ticks.at(-1)!];
  const y = (v: number) => top + plotHeight - ((v - first) / (last - first)) * plotHeight;
  const slot = plotWidth / Math.max(labels.length, 1);
  const height = top + plotHeight + 60;
  const parts = [
    `<svg class="chart" role="img" aria-label="${escapeHtml(title)}" viewBox="0 0 ${left + plotWidth + 20} ${height}" width="100%" font-size="12">`,
    `<text x="${left}" y="16" font-weight="bold">${escapeHtml(title)}</text>`,
    `<text x="14" y="${at(top + plotHeight / 2)}" transform="rotate(-90 14 ${at(top + plotHeight / 2)})" text-anchor="middle">${escapeHtml(unit)}</text>`,
  ];
  for (const tick of ticks) {
    parts.push(`<line x1="${left}" y1="${at(y(tick))}" x2="${left + plotWidth}" y2="${at(y(tick))}" stroke="#bbb" stroke-width="${tick === 0 ? 1.5 : 0.5}"/>`);
    parts.push(`<text x="${left - 6}" y="${at(y(tick) + 4)}" text-anchor="end" fill="#333">${escapeHtml(tickText(tick))}</text>`);
  }
  const every = axisLabelEvery(labels.length);
  labels.forEach((label, i) => {
    if (i % every !== 0) return;
    const cx = left + slot * (i + 0.5);
    parts.push(`<text x="${at(cx)}" y="${top + plotHeight + 14}" text-anchor="end" transform="rotate(-35 ${at(cx)} ${top + plotHeight + 14})">${escapeHtml(label)}</text>`);
  });
  if (series.length === 1) parts.push(...columns(series[0]!.values, left, slot, y));
  else parts.push(...lines(series, left, slot, y), ...legend(series, left));
  parts.push('</svg>');
  return parts.join('\n');
}

function columns(values: readonly number[], left: number, slot: number, y: (v: number) => number): string[] {
  const width = Math.max(slot * 0.8, 0.5);
  return values.map((v, i) => {
    const [a, b] = [y(Math.max(v, 0)), y(Math.min(v, 0))];
    return `<rect x="${at(left + slot * i + (slot - width) / 2)}" y="${at(a)}" width="${at(width)}" height="${at(Math.max(b - a, 0))}" fill="${COLOURS[0]}"/>`;
  });
}

function lines(series: readonly Series[], left: number, slot: number, y: (v: number) => number): string[] {
  return series.map((s, k) => {
    const points = s.values.map((v, i) => `${at(left + slot * (i + 0.5))},${at(y(v))}`).join(' ');
    const dash = DASHES[k % DASHES.length] ? ` stroke-dasharray="${DASHES[k % DASHES.length]}"` : '';
    return `<polyline points="${points}" fill="none" stroke="${COLOURS[k % COLOURS.length]}" stroke-width="2"${dash}/>`;
  });
}

function legend(series: readonly Series[], left: number): string[] {
  return series.flatMap((s, k) => {
    const [x, yy] = [left + (k % 3) * 260, 34 + Math.floor(k / 3) * 18];
    const dash = DASHES[k % DASHES.length] ? ` stroke-dasharray="${DASHES[k % DASHES.length]}"` : '';
    return [
      `<line x1="${x}" y1="${yy - 4}" x2="${x + 28}" y2="${yy - 4}" stroke="${COLOURS[k % COLOURS.length]}" stroke-width="2"${dash}/>`,
      `<text x="${x + 34}" y="${yy}">${escapeHtml(cut(s.name, 32))}</text>`,
    ];
  });
}
