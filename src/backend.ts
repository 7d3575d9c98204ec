import type { ValidateResponse } from './model/validation.js';
import type { RenderLimits } from './validation/limits.js';
import type { ItemsQuery, ReportQuery, TotalQuery, TrendQuery } from './model/query.js';
import type { ACTIVITY_RESPONSE, CONTACT_RESPONSE, IDS_RESPONSE, ORDER_RESPONSE } from './model/schemas.js';
import type { AggregateRow, ConversionRecord, FromSchema, Page, TimeframesResponse, TotalResponse } from './model/types.js';

export interface RowStream<T> {
  /** All matches of the query, as paging.totalCount reports it. */
  totalCount: number;
  /** The version of the data the rows come from, as paging.dataVersion names it (absent when the backend does not know it). */
  dataVersion?: string;
  rows: AsyncIterable<T>;
  /**
   * The same rows already written as csv or tsv lines by the engine (local mode),
   * byte for byte what the formatters would write for `columns`; undefined when
   * the backend cannot (an unknown column, a value it cannot write exactly).
   * Using it, rows is never read.
   */
  text?: (request: TextRequest) => Promise<AsyncIterable<TextChunk> | undefined>;
}

export interface TextRequest {
  /** jsonl: whole records (no --fields). */
  format: 'csv' | 'tsv' | 'jsonl';
  /** Flat (dotted) columns, in order. */
  columns: string[];
  formulaEscape: boolean;
}

/** Some lines of output, each ending in a newline (as text, or its UTF-8 bytes), and how many records they hold. */
export interface TextChunk {
  text: string | Uint8Array;
  rows: number;
}

/** Why an order is, or is not, a conversion (the `order` command's explanation). */
export interface OrderDiagnosis {
  orderId: string;
  found: boolean;
  /** Present for an order that exists but is not a conversion. */
  reasons: string[];
}

/** An order looked up by id over the whole dataset (`convx order`, GET /v1/conversions/orders/{orderId}): its schema's type. */
export type OrderLookup = FromSchema<typeof ORDER_RESPONSE>;

/** A contact's orders, conversions and clicks (`convx contact`, GET /v1/contacts/{contact}/conversions): its schema's type. */
export type ContactReport = FromSchema<typeof CONTACT_RESPONSE>;

/** A click of a contact and what it did: the orders it decided, or why none. */
export type ContactClick = ContactReport['clicks'][number];

/** The source of an activityUrl: a campaign or automation, or a smartflow (and delivery). */
export interface ActivityTarget {
  campaignId?: string;
  smartflowId?: string;
  deliveryId?: string;
}

/** A contact's touches (clicks and opens) of one source: what an activityUrl answers (its schema's type). */
export type ActivityResponse = FromSchema<typeof ACTIVITY_RESPONSE>;

/** What an id names in the data (`convx order`, `contact`, `drill`; GET /v1/ids/{id}), else the ids nearest it: its schema's type. */
export type IdResolution = FromSchema<typeof IDS_RESPONSE>;

/** One thing an id names, or one near it. */
export type IdMatch = IdResolution['matches'][number];

/** A source id the data holds, with the ids a detailUrl may name it by. */
export interface KnownSource {
  type: string;
  id: string;
  campaignId: string | null;
  smartflowId: string | null;
  deliveryId: string | null;
}

/** The first and last instant of a table or of the conversions, as YYYY-MM-DDTHH:MM:SSZ. */
export interface DateRange {
  from: string;
  to: string;
}

/**
 * What dates the data holds, for the hint under an empty result. Each field is
 * absent where the backend cannot tell, and null for a table without rows.
 */
export interface DataCoverage {
  /** Every order row (refunds and cancelled ones too) of the plugin. */
  orders?: DateRange | null;
  /** Every touch of the plugin. */
  touches?: DateRange | null;
  /** The first and last attributed transaction (API mode, where the tables are out of sight). */
  conversions?: DateRange | null;
}

/** What shell completion looks up in the data (`Backend.lookup`): the values a flag takes. */
export const LOOKUP_KINDS = ['plugins', 'currencies', 'countries', 'sources', 'smartflows'] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];

/** At most this many values of a kind are read from one place (a column, a page). */
export const MAX_LOOKUP_VALUES = 1000;

export interface LookupOptions {
  /**
   * Which values count (completion: those a terminal shows as they are), each trimmed; where the
   * data holds a kind in several places in turn (sources before touches), a place without any
   * that counts gives way to the next. Default: every non-empty value.
   */
  accept?: (value: string) => boolean;
  /** Stops the look-up (its time budget ran out): it ends soon after, its answer unused. */
  signal?: AbortSignal;
}

/** The values to offer of what a look-up read: trimmed, non-empty, accepted and distinct, in the order first read. */
export function lookupTexts(values: Iterable<unknown>, accept: LookupOptions['accept'] = () => true): string[] {
  const texts = new Set<string>();
  for (const value of values) {
    if (value === null || value === undefined) continue;
    const text = String(value).trim();
    if (text && accept(text)) texts.add(text);
  }
  return [...texts];
}

/**
 * The contacts a key is the e-mail address or client contact id of (their first rows, by the
 * resolver), and the key as it resolved: two or more, and a look-up by it names none of them
 * (`convx contact`, GET contacts/{key}). None where the backend cannot resolve.
 */
export async function contactsCarrying(backend: Pick<Backend, 'resolve' | 'contactsCarrying'>, key: string, by: ContactReport['matchedBy']): Promise<{ id: string; contacts: IdMatch[] }> {
  if (backend.contactsCarrying && by !== 'contactId') return { id: key.trim(), contacts: await backend.contactsCarrying(key, by) };
  const resolution = await backend.resolve?.(key);
  return { id: resolution?.id ?? key, contacts: (resolution?.matches ?? []).filter((m) => m.kind === 'contact' && m.by === by) };
}

/**
 * A backend opened only for look-ups (`ctx.openBackend({ lookups: true })`): shell completion
 * asks nothing else of it, so local mode may open the files as they are, without checks.
 */
export type Lookups = Pick<Backend, 'lookup' | 'close'>;

/**
 * One interface, two implementations (ARCHITECTURE.md). Both return the
 * interface's JSON shapes; neither prints anything.
 */
export interface Backend {
  report(query: ReportQuery): Promise<Page<AggregateRow>>;
  items(query: ItemsQuery): Promise<Page<ConversionRecord>>;
  /** Every row from query.offset on, in sort order, streamed (query.limit does not apply). */
  allReport(query: ReportQuery): Promise<RowStream<AggregateRow>>;
  allItems(query: ItemsQuery): Promise<RowStream<ConversionRecord>>;
  /** A series of the period: one bucket per hour, day, week or month (every one), per source with perSource. */
  trend(query: TrendQuery): Promise<TimeframesResponse>;
  /** The period's figures over every source. */
  total(query: TotalQuery): Promise<TotalResponse>;
  /**
   * The dry run of an e-mail delivery; findings are in the response, never
   * thrown (a request over a size limit is a TooLargeError). renderLimits:
   * local mode only; a server applies its own.
   */
  validateEmail(request: unknown, renderLimits?: RenderLimits): Promise<ValidateResponse>;
  /** Explains an order that the items query did not find; absent where the backend cannot tell. */
  diagnoseOrder?(orderId: string, period?: { dateFrom: string; dateTo: string }): Promise<OrderDiagnosis>;
  /** The order by id over every date; undefined when the data does not hold that order id. */
  findOrder(orderId: string): Promise<OrderLookup | undefined>;
  /** A contact by contact id, e-mail (case-insensitive) or client contact id; undefined when unknown. */
  contact(key: string): Promise<ContactReport | undefined>;
  /** A contact's touches of one source; undefined when there are none. */
  activity?(target: ActivityTarget, contactId: string): Promise<ActivityResponse | undefined>;
  /** What an id (trimmed) names: an order, a contact, a source; else the ids nearest it. Undefined where the backend cannot tell (an API without GET ids/{id}). */
  resolve?(id: string): Promise<IdResolution | undefined>;
  /** The contacts whose e-mail or client contact id the key (trimmed) is, as resolve's matches of that kind: from the contacts alone (local). */
  contactsCarrying?(key: string, by: 'email' | 'clientContactId'): Promise<IdMatch[]>;
  /** Every source id the data holds (clicks and sources), for suggestions. */
  knownSources?(): Promise<KnownSource[]>;
  /** The date range the data holds (empty results explain themselves); absent where unknown. */
  coverage?(): Promise<DataCoverage>;
  /** Values of a kind the data holds, for shell completion (lookupTexts of what it read); absent where the backend cannot tell. */
  lookup?(kind: LookupKind, options?: LookupOptions): Promise<string[]>;
  close(): Promise<void>;
}
