/**
 * -o html: a report or a series as one page to share. Pure: data in, text out, the same bytes for
 * the same input (no clock, no random id: what the page says of its making is passed in). The page
 * is self-contained and inert: inline CSS (readable printed in black and white), inline SVG charts
 * (svg.ts), no script, no URL of any kind, and a Content-Security-Policy that would block one.
 * Every text from the data is escaped; every figure cell carries the exact JSON text of its value
 * (`data-value`, as -o json prints it) beside the figure as a person reads it.
 */
import type { AggregateRow, TimeframesResponse, TrendBucket } from '../model/types.js';
import { changeFigure, COLUMN_TITLES, getPath, isAmountColumn, REPORT_TABLE_COLUMNS } from './columns.js';
import { escapeHtml } from './escape.js';
import { tableCell } from './format.js';
import { horizontalBars, seriesChart } from './svg.js';
import { trendChartInput } from './chart.js';
import { changePercentText, totalRows } from './table.js';


/** The page's policy: nothing may load or run; only its own inline style (and data: images, of which it has none). */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** What the page says of its making: the period, what narrowed it, the currency, the versions. */
export interface PageHeader {
  dateFrom: string;
  dateTo: string;
  /** The plugin's reference currency; undefined when no row says it (an empty report). */
  referenceCurrency: string | undefined;
  /** convx's version. */
  version: string;
  /** The version of the data the figures come from (paging.dataVersion). */
  dataVersion?: string | undefined;
  /** The filters as the command line gave them ("--country cz"). */
  filters?: readonly string[];
  /** The zone of the period's days, where it is not UTC (a series names its zone always). */
  timeZone?: string | undefined;
  /** The other period of --compare. */
  compared?: { dateFrom: string; dateTo: string } | undefined;
}

/** The header's lines of the zone and of the period compared with, where there are. */
function contextLines(header: PageHeader): [string, string][] {
  return [
    ...(header.timeZone !== undefined ? [['Time zone', header.timeZone] as [string, string]] : []),
    ...(header.compared ? [['Compared with', `${header.compared.dateFrom} to ${header.compared.dateTo}`] as [string, string]] : []),
  ];
}

/** The sources a report's chart shows; the table has every row. */
const CHART_SOURCES = 20;

/** The figures of a page's table: a terminal table's, and revenue without tax beside revenue with it. */
const PAGE_FIGURES = REPORT_TABLE_COLUMNS.filter((c) => c !== 'name' && c !== 'source.type').flatMap((c) =>
  c === 'conversionsAmountWTax' ? ['conversionsAmountWoTax', c] : [c],
);

/** The columns of a report page's table, in order. */
export const REPORT_PAGE_COLUMNS = ['name', 'source.type', ...PAGE_FIGURES];

/** The columns of a series page's table (series and comparison columns join when the buckets have them). */
export const TREND_PAGE_COLUMNS = ['bucket', ...PAGE_FIGURES];

const COMPARISON_COLUMNS = [
  'comparison.figures.conversionsAmountWTax',
  'comparison.change.conversionsAmountWTax.absolute',
  'comparison.change.conversionsAmountWTax.relative',
];

const TITLES: Record<string, string> = {
  ...COLUMN_TITLES,
  bucket: 'Bucket',
  seriesName: 'Series',
  conversionsAmountWoTax: 'Revenue w/o tax',
  'comparison.figures.conversionsAmountWTax': 'Revenue before',
  'comparison.change.conversionsAmountWTax.absolute': 'Change',
  'comparison.change.conversionsAmountWTax.relative': 'Change %',
};

const STYLE = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #111; background: #fff; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; }
.meta { color: #333; margin: 0 0 16px; }
.meta dt { font-weight: 600; display: inline; }
.meta dd { display: inline; margin: 0 16px 0 4px; }
.chart { display: block; max-width: 900px; margin: 8px 0 20px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ccc; padding: 4px 6px; text-align: left; vertical-align: top; }
th { border-bottom: 2px solid #111; font-weight: 600; }
td.num, th.num { text-align: right; }
td.num, td[data-field="bucket"] { white-space: nowrap; }
tfoot td { border-top: 2px solid #111; border-bottom: none; font-weight: 600; }
tbody tr:nth-child(even) { background: #f4f6f8; }
.empty { padding: 16px; border: 1px dashed #777; }
.note { color: #333; font-size: 12px; }
footer { margin-top: 24px; color: #444; font-size: 12px; }
@media print {
  body { margin: 0; max-width: none; font-size: 11px; }
  tbody tr:nth-child(even) { background: none; }
  thead { display: table-header-group; }
  tr, .chart { break-inside: avoid; }
  .chart rect { fill: #555; }
}
`;

/** A figure cell: the value as -o json writes it (data-value) and as a person reads it. */
function cell(record: unknown, column: string): string {
  const value = getPath(record, column);
  if (isFigure(column) && (typeof value === 'number' || value === null || value === undefined)) {
    const figure = column.endsWith('.relative') ? changeFigure(column.slice(0, -'.relative'.length)) : undefined;
    const shown =
      (figure !== undefined && typeof value === 'number' ? changePercentText(record, figure) : undefined) ??
      // no relative change, as the tables say: "new" for a row the other period has not (its change null), "–" where the other side is 0
      (column.endsWith('.relative') && value == null && getPath(record, 'comparison') ? (getPath(record, 'comparison.change') === null ? 'new' : '–') : tableCell(value, column));
    return `<td class="num" data-field="${escapeHtml(column)}" data-value="${JSON.stringify(value ?? null)}">${escapeHtml(shown)}</td>`;
  }
  return `<td data-field="${escapeHtml(column)}">${escapeHtml(tableCell(value, column))}</td>`;
}

function isFigure(column: string): boolean {
  return !['name', 'source.type', 'bucket', 'seriesName', 'id'].includes(column);
}

function headerCells(columns: string[], currency: string | undefined): string {
  return columns
    .map((c) => {
      const title = TITLES[c] ?? c;
      const unit = currency !== undefined && isAmountColumn(c) && !c.endsWith('.relative') ? ` (${currency})` : '';
      return `<th${isFigure(c) ? ' class="num"' : ''} scope="col">${escapeHtml(title + unit)}</th>`;
    })
    .join('');
}

/** The table of records, with a totals row of what adds up (totals: several sources). */
function table(records: unknown[], columns: string[], currency: string | undefined, rowAttributes: (record: unknown) => string, totals: boolean): string {
  const body = records.map((r) => `<tr${rowAttributes(r)}>${columns.map((c) => cell(r, c)).join('')}</tr>`);
  const foot = totals
    ? totalRows(records, columns, 'Total').map((total) => {
        const cells = columns.map((c) => {
          const value = total.get(c);
          if (typeof value !== 'number') return `<td${isFigure(c) ? ' class="num"' : ''}>${escapeHtml(typeof value === 'string' ? value : '')}</td>`;
          return `<td class="num" data-total="${escapeHtml(c)}">${escapeHtml(tableCell(value, c))}</td>`;
        });
        return `<tr>${cells.join('')}</tr>`;
      })
    : [];
  return [
    '<table>',
    `<thead><tr>${headerCells(columns, currency)}</tr></thead>`,
    `<tbody>\n${body.join('\n')}\n</tbody>`,
    foot.length ? `<tfoot>${foot.join('')}</tfoot>` : '',
    '</table>',
  ]
    .filter(Boolean)
    .join('\n');
}

function metaItems(header: PageHeader, more: [string, string][]): [string, string][] {
  const items: [string, string][] = [
    ['Period', `${header.dateFrom} to ${header.dateTo}`],
    ...more,
    ['Reference currency', header.referenceCurrency ?? 'none (no conversions)'],
  ];
  if (header.filters?.length) items.push(['Filters', header.filters.join(' ')]);
  return items;
}

/** What a page is made of around its body (reportHtml, trendHtml here; validationHtml of validation-html.ts). */
export interface PageFrame {
  /** The document's <title>. */
  title: string;
  /** Its <h1>. */
  heading: string;
  /** convx's version, for the generator meta. */
  version: string;
  /** The header's list of names and values. */
  meta: [string, string][];
  body: string[];
  /** The footer's HTML (the caller escapes what comes from data). */
  footer: string;
  /** CSS beside the page's own (STYLE). */
  style?: string;
}

/** The whole document around a page's body: the same head, policy and style for every page. */
export function pageDocument(frame: PageFrame): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(PAGE_CSP)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="generator" content="${escapeHtml(`convx ${frame.version}`)}">`,
    `<title>${escapeHtml(frame.title)}</title>`,
    `<style>${STYLE}${frame.style ?? ''}</style>`,
    '</head>',
    '<body>',
    `<h1>${escapeHtml(frame.heading)}</h1>`,
    `<dl class="meta">${frame.meta.map(([k, v]) => `<dt>${escapeHtml(k)}:</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>`,
    ...frame.body,
    `<footer>${frame.footer}</footer>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** A report's or a series' document around its body. */
function documentOf(title: string, header: PageHeader, more: [string, string][], body: string[]): string {
  const made = `convx ${header.version}${header.dataVersion !== undefined ? `, data version ${header.dataVersion}` : ''}`;
  return pageDocument({
    title: `${title}, ${header.dateFrom} to ${header.dateTo}`,
    heading: title,
    version: header.version,
    meta: metaItems(header, more),
    body,
    footer: `Made by ${escapeHtml(made)}. Each figure's data-value holds the exact number of -o json.`,
  });
}

const money = (n: number) => tableCell(n, 'conversionsAmountWTax');

/**
 * A report (every row of `convx report`) as a page: the header, a chart of each source's revenue
 * with tax (the first CHART_SOURCES by revenue), the table of every row with totals (and, for rows
 * compared with another period, that period's revenue and the change).
 */
export function reportHtml(rows: readonly AggregateRow[], header: PageHeader): string {
  const title = 'Conversions by source';
  if (!rows.length) return documentOf(title, header, [['Sources', '0'], ...contextLines(header)], ['<p class="empty">No conversions were attributed to a source in this period.</p>']);
  const currency = header.referenceCurrency;
  const ranked = rows
    .map((row, i) => ({ row, i }))
    .sort((a, b) => b.row.conversionsAmountWTax - a.row.conversionsAmountWTax || a.i - b.i)
    .slice(0, CHART_SOURCES);
  const chartTitle = `Revenue with tax${currency ? ` (${currency})` : ''}${rows.length > CHART_SOURCES ? `, the ${CHART_SOURCES} largest of ${rows.length} sources` : ''}`;
  const chart = horizontalBars(chartTitle, ranked.map(({ row }) => ({ label: row.name, value: row.conversionsAmountWTax })), money);
  const rowAttributes = (r: unknown) => {
    const row = r as AggregateRow;
    return ` data-source="${escapeHtml(`${row.source.type}:${row.id}`)}"`;
  };
  return documentOf(title, header, [['Sources', String(rows.length)], ...contextLines(header)], [
    chart,
    table([...rows], [...REPORT_PAGE_COLUMNS, ...(rows.some((r) => 'comparison' in r) ? COMPARISON_COLUMNS : [])], currency, rowAttributes, rows.length > 1),
    '<p class="note">Totals add up orders and amounts over the sources; unique contacts and averages do not add up, so they have no total.</p>',
  ]);
}

/**
 * A series (`convx trend`, TimeframesResponse) as a page: the header with the time zone and the
 * interval, a chart of revenue with tax per bucket (a line per series with --per-source), the table
 * of every bucket (with the other period's revenue and the change where the buckets are compared).
 */
export function trendHtml(response: TimeframesResponse, header: Omit<PageHeader, 'dateFrom' | 'dateTo'>): string {
  const { buckets } = response;
  const full: PageHeader = { ...header, dateFrom: response.dateFrom, dateTo: response.dateTo };
  const more: [string, string][] = [
    ...contextLines({ ...full, timeZone: response.timeZone }),
    ['Buckets', `${new Set(buckets.map((b) => b.bucket)).size} (by ${response.interval})`],
  ];
  const title = `Conversions by ${response.interval}`;
  if (!buckets.length) return documentOf(title, full, more, ['<p class="empty">No buckets in this period.</p>']);
  const currency = header.referenceCurrency;
  const { labels, series } = trendChartInput(buckets, undefined, 'all');
  const chart = seriesChart(`Revenue with tax per ${response.interval}${currency ? ` (${currency})` : ''}`, currency ?? '', labels, series);
  const columns = [
    'bucket',
    ...(buckets.some((b) => b.seriesName !== undefined) ? ['seriesName'] : []),
    ...TREND_PAGE_COLUMNS.slice(1),
    ...(buckets.some((b) => b.comparison !== undefined) ? COMPARISON_COLUMNS : []),
  ];
  const rowAttributes = (r: unknown) => {
    const b = r as TrendBucket;
    return ` data-bucket="${escapeHtml(b.bucket)}"${b.series !== undefined ? ` data-series="${escapeHtml(b.series)}"` : ''}`;
  };
  return documentOf(title, full, more, [chart, table([...buckets], columns, currency, rowAttributes, false)]);
}
