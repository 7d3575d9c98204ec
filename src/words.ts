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

const QUOTED_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A value from the data in double quotes for a message, as JSON writes a string but for its control
 * characters other than a line break or a tab: those stay as they are, for the terminal's safe text
 * (output/terminal.ts) to show as "�", and for -o json to hold the value as it is. A line break or a
 * tab is written \n, \r or \t, so that the value stays on its line; a quote or backslash escaped.
 */
export const quoted = (text: string): string => `"${text.replace(/["\\\n\r\t]/g, (c) => QUOTED_ESCAPES[c]!)}"`;

/** A word for the shell: as it is when safe, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A path for the shell (shellWord), one that begins with "-" as ./-name: a command would read it as a flag. */
export const pathWord = (path: string): string => shellWord(path.startsWith('-') ? `./${path}` : path);
