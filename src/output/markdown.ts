/**
 * -o markdown, pure: a GitHub-flavoured markdown table (report's rows) or card (an order, a
 * contact) that pastes into a ticket or a chat. Every value is made safe as the terminal's human
 * formats make it (terminal.ts: one line, no control character, no bidi override), then escaped
 * for markdown (a backslash, pipe, backtick, angle bracket, emphasis or link bracket is taken
 * literally). The facts are those of the terminal's cards (cards.ts), in the same words.
 */
import type { ContactReport } from '../backend.js';
import type { ConversionRecord } from '../model/types.js';
import { clickOutcome, clickText, contactTitle, foundBy, money, orderFacts, orderOutcome, sourceText, timeText } from './cards.js';
import { COLUMN_TITLES } from './columns.js';
import { columnTitle, tableText, totalRows } from './table.js';
import { safeValue } from './terminal.js';

/** A value as markdown text: one safe line, its markdown characters escaped. */
export function escapeMarkdown(text: string): string {
  return safeValue(text).replace(/[\\`|<>*_[\]]/g, (ch) => `\\${ch}`);
}

/** A GFM table: a header row, the alignment row (right where `right` says), then the rows; cells escaped. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], right: readonly boolean[] = []): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const align = headers.map((_, i) => (right[i] ? '---:' : '---'));
  return [line(headers.map(escapeMarkdown)), `|${align.join('|')}|`, ...rows.map((r) => line(r.map(escapeMarkdown)))].join('\n') + '\n';
}

/** A bold line: a card's title or a section's heading. */
const bold = (text: string) => `**${escapeMarkdown(text)}**`;

/**
 * Records as a GFM table (report, -o markdown): the columns' titles as a terminal table names them
 * (money columns with their currency), numbers aligned right, and with `totals` the totals rows.
 */
export function recordsMarkdown(records: readonly unknown[], columns: readonly string[], options: { totals?: boolean; totalLabel?: string } = {}): string {
  const list = [...records];
  const headers = columns.map((c) => columnTitle(list, c, COLUMN_TITLES));
  const cells = list.map((record) => columns.map((c) => tableText(record, c)));
  const totals = options.totals ? totalRows(list, [...columns], options.totalLabel ?? 'Total').map((total) => columns.map((c) => tableText(undefined, c, total.get(c)))) : [];
  const right = columns.map((_, i) => [...cells, ...totals].some((row) => row[i]!.right));
  return markdownTable(
    headers,
    [...cells, ...totals].map((row) => row.map((c) => c.text)),
    right,
  );
}

/** An order that is a conversion as a markdown card: its title, then a table of its facts. */
export function orderMarkdown(records: readonly ConversionRecord[], zone?: string): string {
  const facts = orderFacts(records, zone);
  return `${bold(facts.title)}\n\n${markdownTable(['', ''], facts.lines.map((l) => [l.label, l.value]))}`;
}

/** An order the data holds that is not a conversion, and why, as markdown. */
export function notAConversionMarkdown(orderId: string, reasons: readonly string[]): string {
  const list = reasons.length ? reasons : ['no reason known'];
  return `${bold(`Order ${orderId} is not a conversion`)}\n\n${list.map((r) => `- ${escapeMarkdown(r)}`).join('\n')}\n`;
}

/** A contact as markdown: who, then a table each of the orders, the conversions and the clicks. */
export function contactMarkdown(report: ContactReport, zone?: string): string {
  const at = (iso: string) => timeText(iso, zone);
  const section = (heading: string, headers: string[], rows: string[][], right: boolean[] = []) =>
    `\n${bold(heading)}\n\n${rows.length ? markdownTable(headers, rows, right) : 'none\n'}`;
  return [
    `${bold(contactTitle(report))} (${escapeMarkdown(foundBy(report))})\n`,
    section(
      `Orders (${report.orders.length})`,
      ['Date', 'Order', 'Outcome'],
      report.orders.map((o) => [at(o.datetime), o.orderId, orderOutcome(report, o).text]),
    ),
    section(
      `Conversions (${report.conversions.length})`,
      ['Date', 'Transaction', 'Amount', 'Source', 'Click'],
      report.conversions.map((r: ConversionRecord) => [
        at(r.datetime),
        `${r.isRefund ? 'refund' : 'order'} ${r.orderId}`,
        money(r.conversionsAmount, r.conversionsCurrency),
        sourceText(r.source),
        clickText(r, zone).replace(/^click /, ''),
      ]),
      [false, false, true],
    ),
    section(
      `Clicks (${report.clicks.length})`,
      ['Date', 'Source', 'Outcome'],
      report.clicks.map((k) => [at(k.datetime), sourceText(k.source), clickOutcome(k).text]),
    ),
  ].join('');
}
