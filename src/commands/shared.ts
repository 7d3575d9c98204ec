/** Flags and helpers shared by the reporting commands. */
import type { Backend, RowStream } from '../backend.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import type { Paging } from '../model/types.js';
import {
  BREAKDOWN_COLUMNS,
  BREAKDOWN_TABLE_COLUMNS,
  ITEM_COLUMNS,
  ITEM_TABLE_COLUMNS,
  REPORT_COLUMNS,
  REPORT_TABLE_COLUMNS,
} from '../output/columns.js';
import { breakdownKind, type RecordKind } from '../output/writer.js';

export const ITEM_KIND: RecordKind = {
  columns: ITEM_COLUMNS,
  tableColumns: ITEM_TABLE_COLUMNS,
  objectFields: ['attribution', 'source'],
};

export const REPORT_KIND: RecordKind = {
  columns: REPORT_COLUMNS,
  tableColumns: REPORT_TABLE_COLUMNS,
  objectFields: ['source', 'breakdown'],
};

export const REPORT_BREAKDOWN_KIND = breakdownKind(REPORT_KIND, BREAKDOWN_COLUMNS, BREAKDOWN_TABLE_COLUMNS);

/** How the CLI names each interface parameter, so errors speak in flags. */
export const FLAG_FOR_PARAMETER: Record<string, string> = {
  dateFrom: '--from',
  dateTo: '--to',
  sourceId: '--source',
  sourceType: '--source-type',
  smartflowId: '--smartflow',
  deliveryId: '--delivery',
  contactId: '--contact',
  orderId: '--order',
  country: '--country',
  currency: '--currency',
  limit: '--limit',
  offset: '--offset',
  sort: '--sort',
  q: '-q',
};

/** Runs a parse* of model/query.ts, restating its problems with the CLI's flag names. */
export function parseFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof UsageError && error.problems.length) {
      const text = error.problems.map((p) => `${FLAG_FOR_PARAMETER[p.parameter] ?? p.parameter}: ${p.message}`);
      throw new UsageError(text.length === 1 ? text[0]! : `invalid flags:\n  ${text.join('\n  ')}`, error.problems);
    }
    throw error;
  }
}

export interface PagingFlags {
  sort?: string;
  limit?: string;
  offset?: string;
  all?: boolean;
  country?: string;
  currency?: string;
}

export function pagingParams(flags: PagingFlags): Record<string, string | undefined> {
  return {
    sort: flags.sort,
    limit: flags.limit,
    offset: flags.offset,
    country: flags.country,
    currency: flags.currency,
  };
}

export async function withBackend<T>(ctx: Context, work: (backend: Backend) => Promise<T>): Promise<T> {
  const backend = await ctx.openBackend();
  try {
    return await work(backend);
  } finally {
    await backend.close();
  }
}

/** Prints the backend's dataset warnings (local mode) on stderr, unless --quiet; stdout never changes. */
export function printDatasetWarnings(ctx: Context, backend: Backend): void {
  if (ctx.globals.quiet) return;
  const warnings = (backend as Backend & { warnings?: () => string[] }).warnings?.() ?? [];
  for (const warning of warnings) ctx.log.warn(warning);
}

/** Streams every row of a query to the output, with progress on a terminal's stderr. */
export async function writeAll<T>(ctx: Context, kind: RecordKind, stream: RowStream<T>, start: number): Promise<number> {
  try {
    return await ctx.output.stream(kind, stream, start, (written, total) =>
      ctx.log.progress(`${written.toLocaleString('en-US')} of ${Math.max(total - start, 0).toLocaleString('en-US')} rows`),
    );
  } finally {
    ctx.log.done();
  }
}

/** A line on stderr saying which rows these were and how to get the rest. */
export function pageSummary(ctx: Context, paging: Paging, noun: string, period: string, all: boolean): void {
  if (paging.count === 0) {
    ctx.log.info(
      paging.totalCount === 0
        ? `No ${noun} in ${period}.`
        : `No ${noun} at offset ${paging.start}; there are ${paging.totalCount}.`,
    );
    return;
  }
  const range = `${paging.start + 1}-${paging.start + paging.count} of ${paging.totalCount} ${noun}`;
  const more = !all && paging.start + paging.count < paging.totalCount
    ? `; next page: --offset ${paging.start + paging.count}, every row: --all`
    : '';
  if (ctx.format === 'table' || more) ctx.log.info(`${range}, ${period}${more}`);
}
