/** Terminal tables (cli-table3 is loaded only when a table is printed). */
import Table from 'cli-table3';
import type { ChalkInstance } from 'chalk';
import { COLUMN_TITLES, getPath } from './columns.js';
import { tableCell } from './format.js';

export function renderTable(records: unknown[], columns: string[], chalk: ChalkInstance, titles = COLUMN_TITLES): string {
  const table = new Table({
    head: columns.map((c) => chalk.bold(titles[c] ?? c)),
    style: { head: [], border: [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const record of records) {
    table.push(
      columns.map((column) => {
        const value = getPath(record, column);
        const text = tableCell(value, column);
        const colored = typeof value === 'number' && value < 0 ? chalk.red(text) : text;
        return { content: colored, hAlign: typeof value === 'number' ? ('right' as const) : ('left' as const) };
      }),
    );
  }
  return `${table.toString()}\n`;
}

