/**
 * Flag definitions that several commands share, and the constants their help
 * texts and handlers both use. Plain data: `convx --help` loads this module.
 */
import { ITEM_ID_FILTERS } from '../model/parameters.js';
import type { OptionDefinition } from './registry.js';

export const PERIOD_OPTIONS: OptionDefinition[] = [
  { flags: '--from <date>', description: 'first day, inclusive (YYYY-MM-DD, UTC)' },
  { flags: '--to <date>', description: 'last day, inclusive (YYYY-MM-DD, UTC)' },
];

export const PAGING_OPTIONS: OptionDefinition[] = [
  { flags: '--sort <fields>', description: 'sort fields, comma-separated or repeated, "-" for descending', list: true },
  { flags: '--limit <n>', description: 'rows per page, 1 to 1000 (default 50)' },
  { flags: '--offset <n>', description: 'rows to skip (default 0)' },
  { flags: '--all', description: 'every row from --offset on, streamed' },
];

export const FILTER_OPTIONS: OptionDefinition[] = [
  { flags: '--country <codes>', description: 'only these countries: two-letter codes, comma-separated or repeated, any case (CZ,SK)', list: true },
  { flags: '--currency <codes>', description: 'only these order currencies: three-letter codes, comma-separated or repeated, any case (EUR,CZK)', list: true },
];

/** The items filters: one flag per row of model/parameters.ts, then the code lists. */
export const ITEM_FILTER_OPTIONS: OptionDefinition[] = [
  ...ITEM_ID_FILTERS.map((f) => ({ flags: f.flag, description: f.help })),
  ...FILTER_OPTIONS,
];

/** What `convx order` searches in API mode without --from/--to. */
export const API_ORDER_DAYS = 365;

/** The output formats of `convx validate`. Without -o: a summary on a terminal, the JSON body when piped. */
export const VALIDATE_FORMATS = ['table', 'json', 'github', 'junit'] as const;
