/**
 * The values shell completion offers for a flag from the configured dataset or API (plugins,
 * currencies, countries, source and smartflow ids: `Backend.lookup`, through `ctx.openLookups()`)
 * or from the config (profiles): what `convx completion --values KIND` prints and `convx __complete`
 * offers. Only values a terminal shows as they are, never a token, nothing on any error, and
 * nothing once the time budget runs out.
 */
import { LOOKUP_KINDS, lookupTexts, MAX_LOOKUP_VALUES, type LookupKind } from '../backend.js';
import { LOOKUP_BUDGET_MS } from '../backends.js';
import type { Context } from '../context.js';
import { safeValue } from '../output/terminal.js';

/** What `--values` prints, and what completion looks up. */
export const VALUE_KINDS = [...LOOKUP_KINDS, 'profiles'] as const;
export type ValueKind = (typeof VALUE_KINDS)[number];

/** How long `--values` may take before it prints nothing: a TAB must not hang the shell. */
export const VALUES_BUDGET_MS = LOOKUP_BUDGET_MS;

export const isValueKind = (kind: string): kind is ValueKind => (VALUE_KINDS as readonly string[]).includes(kind);

/** A value a terminal would not show as it is (white space, controls, C1, bidi overrides) is never offered. */
const shows = (text: string) => !/\s/.test(text) && safeValue(text) === text;

/** Distinct values a terminal shows as they are, sorted, at most MAX_LOOKUP_VALUES. */
function tidy(values: Iterable<unknown>, upper: boolean): string[] {
  const texts = lookupTexts(values, shows).map((text) => (upper ? text.toUpperCase() : text));
  return [...new Set(texts)].sort().slice(0, MAX_LOOKUP_VALUES);
}

/** The data's values of a kind: any error is none. */
async function lookedUp(ctx: Context, kind: LookupKind, signal: AbortSignal): Promise<string[]> {
  const lookups = await ctx.openLookups();
  try {
    return tidy((await lookups.lookup?.(kind, { accept: shows, signal })) ?? [], kind === 'currencies' || kind === 'countries');
  } finally {
    await lookups.close();
  }
}

/** The values of a kind, or none: any error, or the time budget running out, gives none. */
export async function completionValues(ctx: Context, kind: string, budgetMs = VALUES_BUDGET_MS): Promise<string[]> {
  if (!isValueKind(kind)) return [];
  if (kind === 'profiles') return tidy(Object.keys(ctx.config.profiles), false);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve([]);
    }, budgetMs);
  });
  const work = lookedUp(ctx, kind, controller.signal).catch(() => [] as string[]);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
