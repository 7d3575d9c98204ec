/**
 * A comparison of two periods (--compare, compareTo), pure: the other period of a query, and the
 * comparison object of a row, bucket or total from its figures and the other side's. The change is
 * exact: the figures are exact decimals of at most 2 places (amounts, averages) or whole numbers
 * (counts), so they are compared as whole cents, the relative change by integer division.
 */
import type { CompareTo } from './parameters.js';
import { addDays, daysOf } from './query.js';
import { COMPARED_FIGURES } from './shapes.js';
import type { Change, ComparedFigures, Comparison, Period } from './types.js';

export type ComparedFigure = (typeof COMPARED_FIGURES)[number];

/** The same date a year before; February 29 is February 28. */
function yearBefore(date: string): string {
  const year = String(Number(date.slice(0, 4)) - 1).padStart(4, '0');
  const monthDay = date.slice(5) === '02-29' ? '02-28' : date.slice(5);
  return `${year}-${monthDay}`;
}

/**
 * The period a query's is compared with: previous, the period of equal length ending the day
 * before dateFrom; year, the same dates a year before (a period ending on February 29 ends on
 * February 28 then, a day shorter).
 */
export function otherPeriod(period: Period, compareTo: CompareTo): Period {
  if (compareTo === 'year') return { dateFrom: yearBefore(period.dateFrom), dateTo: yearBefore(period.dateTo) };
  const dateTo = addDays(period.dateFrom, -1);
  return { dateFrom: addDays(dateTo, 1 - daysOf(period.dateFrom, period.dateTo)), dateTo };
}

/** Whole hundredths of a figure (exact: the figures have at most 2 decimal places). */
const cents = (value: number) => BigInt(Math.round(value * 100));

/** a / b rounded half away from zero to a whole number, exact. */
function roundDiv(a: bigint, b: bigint): bigint {
  const negative = a < 0n !== b < 0n;
  const [x, y] = [a < 0n ? -a : a, b < 0n ? -b : b];
  const q = (2n * x + y) / (2n * y);
  return negative ? -q : q;
}

/** A figure's change from that to this: this minus that (exact), and its ratio to that to 4 decimals (null when that is 0). */
export function changeOf(current: number, other: number): Change {
  const [a, b] = [cents(current), cents(other)];
  const absolute = Number(a - b) / 100;
  return { absolute, relative: b === 0n ? null : Number(roundDiv((a - b) * 10_000n, b)) / 10_000 };
}

/**
 * A figure's change as a table shows it: whole tenths of a percent of (this − that) / that, rounded
 * half away from zero from the two exact figures (never from the 4-decimal `relative`, which would
 * round twice: 200.00 → 224.69 is +12.345 %, so +12.3 %, where 0.1235 would give +12.4 %). Its
 * direction is the relative change's (0 where this equals that; null where that is 0, as `relative`).
 */
export function changeTenths(absolute: number, other: number): { tenths: bigint; direction: -1 | 0 | 1 } | null {
  const [d, b] = [cents(absolute), cents(other)];
  if (b === 0n) return null;
  const tenths = roundDiv(d * 1_000n, b);
  const direction = d === 0n ? 0 : d < 0n !== b < 0n ? -1 : 1;
  return { tenths: tenths < 0n ? -tenths : tenths, direction };
}

/** The compared figures of a row, bucket or total, in COMPARED_FIGURES' order. */
function comparedFigures(figures: Readonly<Record<ComparedFigure, number>>): ComparedFigures {
  return Object.fromEntries(COMPARED_FIGURES.map((f) => [f, figures[f]])) as unknown as ComparedFigures;
}

/**
 * The comparison of a row, bucket or total with its other side (undefined: it does not exist in
 * the other period: figures and change null). `bucket`: the other side's bucket, in a series.
 */
export function comparisonOf(
  period: Period,
  current: Readonly<Record<ComparedFigure, number>>,
  other: Readonly<Record<ComparedFigure, number>> | undefined,
  bucket: string | null = null,
): Comparison {
  const base = { dateFrom: period.dateFrom, dateTo: period.dateTo, bucket };
  if (other === undefined) return { ...base, figures: null, change: null };
  const change = Object.fromEntries(COMPARED_FIGURES.map((f) => [f, changeOf(current[f], other[f])]));
  return { ...base, figures: comparedFigures(other), change: change as unknown as Comparison['change'] & object };
}
