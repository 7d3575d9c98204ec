/**
 * The cards of the look-ups by id, pure: an order (`convx order`) and a contact (`convx contact`)
 * as a person reads them on a terminal, and their facts in words a support agent pastes
 * (markdown.ts renders the same facts as markdown).
 *
 * - durations in days and hours ("13 days 14 h before the order"), not a number of hours;
 * - every time in UTC, and beside it in the zone asked (--tz, CONVX_TZ or the profile's tz) when
 *   that is not UTC;
 * - an automation named as one (its id is not a campaign's);
 * - lines wrapped at spaces to the terminal's width, a wrapped value under its first line (a
 *   word longer than the line, a link, stays whole).
 *
 * Values come from the data: the callers pass them through safeData (terminal.ts) first.
 */
import type { ChalkInstance } from 'chalk';
import type { ContactReport } from '../backend.js';
import { zoneTime } from '../model/period.js';
import type { ConversionRecord } from '../model/types.js';
import { plural } from '../words.js';
import { tableCell } from './format.js';
import { wrapRuns, type TextRun } from './terminal.js';

export interface CardOptions {
  chalk: ChalkInstance;
  /** The terminal's width: lines wrap at spaces to it; undefined: every line whole (a pipe, --wide). */
  width?: number;
  /** A zone other than UTC (an IANA name): every time is shown in it too, beside UTC. */
  timeZone?: string;
}

/** How a run of text is coloured on a terminal. */
export type Tone = 'bold' | 'dim' | 'good' | 'bad';

/** A run of text of one colour. */
export interface Run extends TextRun {
  tone?: Tone;
}

/** A duration of hours as days and hours, rounded to the hour: "13 days 14 h", "5 h", "1 day"; under an hour in minutes. */
export function duration(hours: number): string {
  if (hours < 1) return `${Math.round(hours * 60)} min`;
  const whole = Math.round(hours);
  const days = Math.floor(whole / 24);
  const rest = whole % 24;
  if (days === 0) return `${rest} h`;
  return rest === 0 ? plural(days, 'day') : `${plural(days, 'day')} ${rest} h`;
}

/** A time as the interface gives it (UTC, ISO 8601) and, in a zone other than UTC, its wall clock there. */
export function timeText(iso: string, zone?: string): string {
  const instant = new Date(iso);
  if (zone === undefined || Number.isNaN(instant.getTime())) return iso;
  return `${iso} (${zoneTime(instant, zone)} ${zone})`;
}

/** An amount with its currency: "24.24 EUR". */
export function money(amount: number, currency: string): string {
  return `${tableCell(amount, 'conversionsAmount')} ${currency}`;
}

/** What the card calls a source's campaign id: an automation's id is an automation's. */
export function campaignLabel(type: string): string {
  return type === 'automation' ? 'automation' : 'campaign';
}

/** The facts of an order card: its title and its label/value lines (terminal and markdown alike). */
export interface OrderFacts {
  title: string;
  lines: { label: string; value: string; tone?: Tone }[];
}

/** An order's conversion records (the order and its refunds) as the facts of its card. */
export function orderFacts(records: readonly ConversionRecord[], zone?: string): OrderFacts {
  const first = records[0]!;
  const { source, attribution } = first;
  const lines: OrderFacts['lines'] = [
    { label: 'source', value: `${source.name} (${source.type} ${source.id})` },
    { label: campaignLabel(source.type), value: source.campaignId },
  ];
  if (source.smartflowId) lines.push({ label: 'smartflow', value: `${source.smartflowName ?? source.smartflowId} (${source.smartflowId})` });
  if (source.deliveryId) lines.push({ label: 'delivery', value: `${source.deliveryName ?? source.deliveryId} (${source.deliveryId})` });
  const name = [first.firstName, first.surname].filter(Boolean).join(' ');
  lines.push({ label: 'contact', value: `${first.contactId}${first.clientContactId ? ` / ${first.clientContactId}` : ''}${name ? ` (${name})` : ''}` });
  lines.push({
    label: 'click',
    value: `${timeText(attribution.datetime, zone)}, ${duration(attribution.hoursToConversion)} before the order (${attribution.model}, ${attribution.windowDays}-day window)`,
  });
  for (const record of records) {
    const amount = money(record.conversionsAmount, record.conversionsCurrency);
    const reference = record.conversionsCurrency === record.referenceCurrency ? '' : ` = ${money(record.conversionsReferenceAmount, record.referenceCurrency)}`;
    const value = `${timeText(record.datetime, zone)}  ${amount}${reference}${record.country ? `  ${record.country}` : ''}`;
    lines.push(record.isRefund ? { label: 'refund', value, tone: 'bad' } : { label: 'order', value });
  }
  lines.push({ label: 'detail', value: source.detailUrl }, { label: 'activity', value: first.activityUrl });
  return { title: `Order ${first.orderId}: a conversion of ${source.type} "${source.name}"`, lines };
}

/** The order card on a terminal: a bold title, then a dim label and its value a line. */
export function orderCard(records: readonly ConversionRecord[], options: CardOptions): string {
  const facts = orderFacts(records, options.timeZone);
  const width = Math.max(...facts.lines.map((l) => l.label.length));
  const out = [...layout([{ text: facts.title, tone: 'bold' }], options, 2)];
  for (const line of facts.lines) {
    const runs: Run[] = [{ text: '  ' }, { text: line.label.padEnd(width), tone: 'dim' }, { text: '  ' }, { text: line.value, ...(line.tone ? { tone: line.tone } : {}) }];
    out.push(...layout(runs, options, width + 4));
  }
  return `${out.join('\n')}\n`;
}

const MATCHED_BY = { contactId: 'contact id', email: 'e-mail', clientContactId: 'client contact id' } as const;

/** The contact card's first line: its ids, name and e-mail address. */
export function contactTitle(report: ContactReport): string {
  const c = report.contact;
  const name = [c.firstName, c.surname].filter(Boolean).join(' ');
  return `Contact ${c.contactId}${c.clientContactId ? ` / ${c.clientContactId}` : ''}${name ? ` (${name})` : ''}${c.email ? ` <${c.email}>` : ''}`;
}

/** How the contact was found: "found by e-mail". */
export const foundBy = (report: ContactReport): string => `found by ${MATCHED_BY[report.matchedBy]}`;

/** A source as the contact card names it: `campaign "Spring sale" (k-1)`. */
export const sourceText = (source: { type: string; id: string; name: string }): string => `${source.type} "${source.name}" (${source.id})`;

/** An order's outcome: the source it is a conversion of, or why it is none. */
export function orderOutcome(report: ContactReport, order: ContactReport['orders'][number]): { text: string; counted: boolean } {
  if (!order.conversion) return { text: `not a conversion: ${order.reasons.join('; ') || 'no reason known'}`, counted: false };
  const source = report.conversions.find((r) => r.orderId === order.orderId)?.source;
  return { text: `a conversion of ${source ? sourceText(source) : 'a source'}`, counted: true };
}

/** A click's outcome: the orders it decided, or why it decided none. */
export function clickOutcome(click: ContactReport['clicks'][number]): { text: string; counted: boolean } {
  return click.orderIds.length ? { text: `decided ${click.orderIds.join(', ')}`, counted: true } : { text: `did not count: ${click.reason}`, counted: false };
}

/** A conversion's deciding click: "click 2024-03-08T06:18:56.437Z, 13 days 14 h before". */
export const clickText = (record: ConversionRecord, zone?: string): string =>
  `click ${timeText(record.attribution.datetime, zone)}, ${duration(record.attribution.hoursToConversion)} before`;

/** The terminal view of a contact: who, the orders and conversions with their sources, and every click with its outcome. */
export function contactCard(report: ContactReport, options: CardOptions): string {
  const zone = options.timeZone;
  const at = (iso: string) => timeText(iso, zone);
  const out: string[] = [...layout([{ text: contactTitle(report), tone: 'bold' }], options, 2), ...layout([{ text: `  ${foundBy(report)}`, tone: 'dim' }], options, 4)];
  const section = (heading: string, items: Run[][]) => {
    out.push('', ...layout([{ text: heading, tone: 'bold' }], options, 2));
    if (items.length === 0) out.push(...layout([{ text: '  none', tone: 'dim' }], options, 4));
    for (const runs of items) out.push(...layout(runs, options, 4));
  };
  section(
    `Orders (${report.orders.length})`,
    report.orders.map((o) => {
      const outcome = orderOutcome(report, o);
      return [{ text: `  ${at(o.datetime)}  ${o.orderId}  ` }, { text: outcome.text, tone: outcome.counted ? 'good' : 'dim' }];
    }),
  );
  section(
    `Conversions (${report.conversions.length})`,
    report.conversions.map((r) => {
      const what = `${r.isRefund ? 'refund' : 'order '} ${r.orderId}`;
      const text = `  ${at(r.datetime)}  ${what}  ${money(r.conversionsAmount, r.conversionsCurrency)}  ${sourceText(r.source)}, ${clickText(r, zone)}`;
      return [r.isRefund ? { text, tone: 'bad' } : { text }];
    }),
  );
  section(
    `Clicks (${report.clicks.length})`,
    report.clicks.map((k) => {
      const outcome = clickOutcome(k);
      return [{ text: `  ${at(k.datetime)}  ${sourceText(k.source)}  ` }, { text: outcome.text, tone: outcome.counted ? 'good' : 'dim' }];
    }),
  );
  return `${out.join('\n')}\n`;
}

/** Runs laid out to the width (wrapRuns) and coloured: the lines of the text. */
function layout(runs: Run[], options: CardOptions, indent: number): string[] {
  return wrapRuns(runs, options.width, indent).map((line) => paint(line, options.chalk));
}

/** A line's runs with their colours; neighbouring runs of one tone in one colour sequence. */
export function paint(line: Run[], chalk: ChalkInstance): string {
  const merged: Run[] = [];
  for (const run of line) {
    const last = merged.at(-1);
    if (last && last.tone === run.tone) last.text += run.text;
    else merged.push({ ...run });
  }
  const colour = { bold: chalk.bold, dim: chalk.dim, good: chalk.green, bad: chalk.red } as const;
  return merged.map((run) => (run.tone ? colour[run.tone](run.text) : run.text)).join('');
}
