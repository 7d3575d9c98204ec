/** Words of messages that more than one part of convx writes. Plain: any module may import it. */

/** A count with its noun: "1 contact", "2 contacts" ("1 row has", "2 rows have" with `many`). */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The word of a count: `one` for 1, else `many` ("1 recipient gets", "2 recipients get"). */
export const agree = (n: number, one: string, many: string): string => (n === 1 ? one : many);

/**
 * A whole number (an integer: a count, a size) with thousands commas, as toLocaleString('en-US') writes it ("1,234,567"), without
 * Intl: its first use loads ICU's number data, some 13-15 ms of a command that prints one count.
 */
export const withCommas = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** A word for the shell: as it is when safe, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
