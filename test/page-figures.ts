/** The figures of a page of -o html (output/html.ts) against the JSON: html.test.ts on the text, html-report.test.ts on Chromium's DOM. */
import { expect } from 'vitest';
import type { AggregateRow } from '../src/model/types.js';
import { getPath } from '../src/output/columns.js';
import { REPORT_PAGE_COLUMNS } from '../src/output/html.js';

/** The figure cells of each row of a page: row key -> field -> data-value (the JSON text). */
export function pageFigures(html: string, rowAttribute: string): Map<string, Map<string, string>> {
  const rows = new Map<string, Map<string, string>>();
  for (const [, key, body] of html.matchAll(new RegExp(`<tr ${rowAttribute}="([^"]*)"[^>]*>(.*?)</tr>`, 'gs'))) {
    const cells = new Map<string, string>();
    for (const [, field, value] of body!.matchAll(/data-field="([^"]*)" data-value="([^"]*)"/g)) cells.set(field!, value!);
    rows.set(key!, cells);
  }
  return rows;
}

/** A page's figures equal the JSON's number text, cell by cell, for every row of the JSON. */
export function expectFiguresOfJson(figures: Map<string, Map<string, string>>, rows: AggregateRow[]): void {
  expect([...figures.keys()].sort()).toEqual(rows.map((r) => `${r.source.type}:${r.id}`).sort());
  for (const row of rows) {
    const cells = figures.get(`${row.source.type}:${row.id}`)!;
    const numeric = REPORT_PAGE_COLUMNS.filter((c) => typeof getPath(row, c) === 'number');
    expect([...cells.keys()]).toEqual(numeric);
    for (const column of numeric) expect(cells.get(column), `${row.id} ${column}`).toBe(JSON.stringify(getPath(row, column)));
  }
}

