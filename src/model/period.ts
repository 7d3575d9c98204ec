/**
 * A period's days in a time zone (docs/reporting.md, Time zones): the instants where a zone's day
 * starts, and a period of such days as absolute instants [start, end). Pure (Intl only, no
 * DuckDB): local mode filters on these instants, and a series buckets by them.
 *
 * A day of a zone runs from its local midnight to the next day's: 23 or 25 hours on a DST day;
 * where local midnight does not exist (clocks jump over it), the day starts at the first instant
 * that does; where it exists twice, at the first.
 */
import { closest } from './closest.js';

/** The zone of every answer unless another is asked: its days are UTC days. */
export const UTC = 'UTC';

/** Every date a period can name (the four-digit years): a look-up over the whole dataset. */
export const EVERY_DATE = { dateFrom: '0001-01-01', dateTo: '9999-12-31' } as const;

/** A local date-time as the milliseconds of the same wall clock read as UTC. */
type Wall = number;

const FORMATTERS = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = FORMATTERS.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    FORMATTERS.set(zone, f);
  }
  return f;
}

/** Milliseconds of a calendar day at 00:00 UTC (years 0-99 as they are, unlike Date.UTC). */
function utcMidnight(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime();
}

/** The wall clock of an instant in a zone (whole seconds; the milliseconds kept). */
function wallAt(instant: number, zone: string): Wall {
  const parts: Record<string, string> = {};
  for (const part of formatter(zone).formatToParts(new Date(instant))) parts[part.type] = part.value;
  const year = parts.era === 'BC' || parts.era === 'B' ? 1 - Number(parts.year) : Number(parts.year);
  const seconds = Number(parts.hour) * 3600 + Number(parts.minute) * 60 + Number(parts.second);
  return utcMidnight(year, Number(parts.month), Number(parts.day)) + seconds * 1000 + (((instant % 1000) + 1000) % 1000);
}

/** The zone's offset from UTC at an instant, in milliseconds. */
const offsetAt = (instant: number, zone: string): number => wallAt(instant, zone) - instant;

const HOURS_14 = 14 * 3600 * 1000;

/** The first instant whose wall clock in the zone is `wall`, or, in a gap that skips it, the first instant after the gap. */
function firstInstantOf(wall: Wall, zone: string): number {
  // The offsets around the wall clock (every zone's offset lies within 14 hours of UTC, a day changes it at most once here).
  const offsets = [...new Set([offsetAt(wall - HOURS_14, zone), offsetAt(wall, zone), offsetAt(wall + HOURS_14, zone)])];
  const exact = offsets.map((o) => wall - o).filter((t) => wallAt(t, zone) === wall);
  if (exact.length) return Math.min(...exact);
  // A gap: the clock jumps from before `wall` to after it. The jump lies between the candidates.
  let lo = Math.min(...offsets.map((o) => wall - o));
  let hi = Math.max(...offsets.map((o) => wall - o));
  // lo's wall clock is before `wall`, hi's after: the first instant whose clock is past `wall`.
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallAt(mid, zone) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

const DAY_RE = /^(\d{4,})-(\d{2})-(\d{2})$/;

function dayParts(date: string): [number, number, number] {
  const m = DAY_RE.exec(date);
  if (!m) throw new Error(`internal: not a date ${JSON.stringify(date)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** The days from 1970-01-01 to a date (YYYY-MM-DD): its number as DuckDB's `day - DATE '1970-01-01'` gives it. */
export function utcDayNumber(date: string): number {
  return utcMidnight(...dayParts(date)) / 86_400_000;
}

/** The instant a day (YYYY-MM-DD) of the zone starts: its local midnight, or the first instant after it where midnight does not exist. */
export function zoneDayStart(date: string, zone: string): Date {
  const midnight = utcMidnight(...dayParts(date));
  return new Date(zone === UTC ? midnight : firstInstantOf(midnight, zone));
}

/** The instant the day after `date` starts in the zone: where `date` ends. */
function zoneDayEnd(date: string, zone: string): Date {
  const [y, m, d] = dayParts(date);
  const next = new Date(utcMidnight(y, m, d) + 86_400_000);
  const midnight = next.getTime();
  return new Date(zone === UTC ? midnight : firstInstantOf(midnight, zone));
}

/** A period of the zone's days as absolute instants: [start of dateFrom, end of dateTo). */
export function periodInstants(dateFrom: string, dateTo: string, zone: string): { start: Date; end: Date } {
  return { start: zoneDayStart(dateFrom, zone), end: zoneDayEnd(dateTo, zone) };
}

/** The date (YYYY-MM-DD) of an instant in the zone. */
export function zoneDate(instant: Date, zone: string): string {
  return isoDay(zone === UTC ? instant.getTime() : wallAt(instant.getTime(), zone));
}

/** The wall clock of an instant in the zone, to the second: `2024-03-08 07:18:56` (a card shows it beside UTC). */
export function zoneTime(instant: Date, zone: string): string {
  const wall = zone === UTC ? instant.getTime() : wallAt(instant.getTime(), zone);
  return `${isoDay(wall)} ${new Date(wall).toISOString().slice(11, 19)}`;
}

function isoDay(ms: number): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const year = y >= 0 && y <= 9999 ? String(y).padStart(4, '0') : String(y);
  return `${year}-${String(d.getUTCMonth() + 1).padStart(2, '0')}-${String(d.getUTCDate()).padStart(2, '0')}`;
}

/**
 * The UTC days that hold a zone's period (its first and last instant's UTC dates): what must be
 * attributed to answer the period exactly. Undefined where they reach past the four-digit years
 * (a zone's first day of 0001 that starts on 0000-12-31 UTC, its last of 9999 that ends in 10000):
 * every day then, as no period of dates names such a day.
 */
export function utcDaysOf(dateFrom: string, dateTo: string, zone: string): { dateFrom: string; dateTo: string } | undefined {
  if (zone === UTC) return { dateFrom, dateTo };
  const { start, end } = periodInstants(dateFrom, dateTo, zone);
  const days = { dateFrom: isoDay(start.getTime()), dateTo: isoDay(end.getTime() - 1) };
  const named = (day: string) => day.length === 10 && day >= EVERY_DATE.dateFrom && day <= EVERY_DATE.dateTo;
  return named(days.dateFrom) && named(days.dateTo) ? days : undefined;
}

/** An instant as a TIMESTAMP literal's text (UTC, milliseconds): what local mode compares datetime with. */
export function timestampText(instant: Date): string {
  return instantText(instant).slice(0, -1).replace('T', ' ');
}

/**
 * An instant as every answer writes one (DuckDB's strftime '%Y-%m-%dT%H:%M:%S.%gZ'): as
 * toISOString does, but a year past 9999 without toISOString's sign and zeros (`10000-01-01T…`).
 */
export function instantText(instant: Date): string {
  const ms = instant.getTime();
  // From the end: toISOString writes a year past 9999 with more digits and a sign.
  return `${isoDay(ms)}T${new Date(ms).toISOString().slice(-13)}`;
}

/**
 * The zones ICU (Node's Intl) still calls by a spelling IANA has replaced, each under IANA's
 * current name (CLDR's list): Intl resolves `Asia/Kathmandu` to `Asia/Katmandu`, lists only the
 * old name, and DuckDB knows both. A test checks each pair against this Node's Intl.
 */
export const ICU_OLD_NAMES: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** A zone's name as Intl resolves it, in IANA's current spelling. */
const ianaName = (icuName: string): string => ICU_OLD_NAMES[icuName] ?? icuName;

/** Every zone this Node knows, by its canonical name (IANA's current spelling), sorted by code point: what completion offers. */
export function zoneNames(): string[] {
  return [...new Set(Intl.supportedValuesOf('timeZone').map(ianaName))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * canonicalZone's answers by the name asked: the process's Intl data does not change, and a
 * DateTimeFormat takes some 50 microseconds to make, asked a few times by each command.
 */
const CANONICAL = new Map<string, string | undefined>();
const CANONICAL_NAMES = 256;

/**
 * A zone's canonical name: the zone Intl resolves it to, spelled as IANA names it today
 * (`europe/prague` is `Europe/Prague`, `utc` is `UTC`, `US/Eastern` is `America/New_York`,
 * `Asia/Calcutta` and `Asia/Kolkata` are `Asia/Kolkata`); undefined when Intl does not know it.
 * An offset (`+02:00`) is no zone.
 */
export function canonicalZone(name: string): string | undefined {
  const known = CANONICAL.get(name);
  if (known !== undefined || CANONICAL.has(name)) return known;
  const zone = resolvedZone(name);
  // Bounded: a server is asked any name; the oldest goes first.
  if (CANONICAL.size >= CANONICAL_NAMES) CANONICAL.delete(CANONICAL.keys().next().value!);
  CANONICAL.set(name, zone);
  return zone;
}

/** canonicalZone's answer, worked out. */
function resolvedZone(name: string): string | undefined {
  if (/^\s*$/.test(name) || /^(?:UTC|GMT)?\s*[+-]\d/i.test(name)) return undefined;
  try {
    return ianaName(new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone);
  } catch {
    return undefined;
  }
}

/** Why a name is not a zone, as the parser words it (CLI and server alike); undefined when it is one. */
export function zoneProblem(name: string): string | undefined {
  if (canonicalZone(name) !== undefined) return undefined;
  if (/^(?:UTC|GMT)?\s*[+-]\d/i.test(name)) {
    return `"${name}" is an offset, not a time zone: give an IANA name such as Europe/Prague (Etc/GMT-2 is a fixed +02:00)`;
  }
  // A name too short to tell (or blank) is close to everything: no guess.
  // The old spellings are matched too (Asia/Calcuta), and named as they are called now.
  const near = name.trim().length < 3 ? [] : closest(name.trim().replace(/ +/g, '_'), [...zoneNames(), ...Object.keys(ICU_OLD_NAMES)]);
  const named = [...new Set(near.map(ianaName))];
  return `"${name}" is not a time zone (an IANA name such as Europe/Prague)${named.length ? `; did you mean ${named.join(', ')}?` : ''}`;
}
