/**
 * JSON shapes of the reporting interface (interface document, tables 2.1 to 2.5):
 * the response types are read from their JSON Schemas in shapes.ts, so a field is
 * defined once.
 */
import type { COMPONENT_SCHEMAS, SOURCE_TYPES } from './shapes.js';

export { SOURCE_TYPES } from './shapes.js';
export type SourceType = (typeof SOURCE_TYPES)[number];

type Schemas = typeof COMPONENT_SCHEMAS;

/** A JSON type name as TypeScript: 'string' is string, ['string', 'null'] is string | null. */
type JsonType<T> = T extends readonly (infer U)[]
  ? JsonType<U>
  : T extends 'string'
    ? string
    : T extends 'number' | 'integer'
      ? number
      : T extends 'boolean'
        ? boolean
        : T extends 'null'
          ? null
          : never;

/**
 * The TypeScript type of a schema (shapes.ts, the look-ups' in schemas.ts), for the
 * forms used there: $ref (to the interface of that name below), enum, array, object,
 * type (['string', 'null'] for a nullable one).
 */
export type FromSchema<S> = S extends { $ref: `#/components/schemas/${infer N extends keyof Named}` }
  ? Named[N]
  : S extends { oneOf: readonly (infer U)[] }
    ? FromSchema<U>
  : S extends { enum: readonly (infer E)[] }
    ? E
    : S extends { type: 'array'; items: infer I }
      ? FromSchema<I>[]
      : S extends { type: 'object'; properties: infer P }
        ? ObjectOf<P, S extends { required: readonly (infer R)[] } ? R : keyof P>
        : S extends { type: infer T }
          ? JsonType<T>
          : never;

/** An object's properties as TypeScript: those the schema requires (every one, without a required list) and the optional rest. */
type ObjectOf<P, R> = Flat<
  { -readonly [K in keyof P as K extends R ? K : never]: FromSchema<P[K]> } & { -readonly [K in keyof P as K extends R ? never : K]?: FromSchema<P[K]> }
>;
/** One object type of an intersection (so that types compare equal to the plain object they spell). */
type Flat<T> = { [K in keyof T]: T[K] };

type Shape<N extends keyof Schemas> = FromSchema<Schemas[N]>;

export interface Source extends Shape<'Source'> {}
export interface Attribution extends Shape<'Attribution'> {
  /** The schema says string; convx only ever attributes by last click. */
  model: typeof ATTRIBUTION_MODEL;
}
export interface ConversionRecord extends Shape<'ConversionRecord'> {}
export interface BreakdownRow extends Shape<'BreakdownRow'> {}
export interface AggregateRow extends Shape<'AggregateRow'> {}
export interface Paging extends Shape<'Paging'> {}
export interface ItemsResponse extends Shape<'ItemsResponse'> {}
export interface ReportResponse extends Shape<'ReportResponse'> {}
export interface ComparedFigures extends Shape<'ComparedFigures'> {}
export interface Change extends Shape<'Change'> {}
export interface Changes extends Shape<'Changes'> {}
export interface Comparison extends Shape<'Comparison'> {}
export interface PeriodFigures extends Shape<'PeriodFigures'> {}
export interface TrendBucket extends Shape<'TrendBucket'> {}
export interface TimeframesResponse extends Shape<'TimeframesResponse'> {}
export interface TotalResponse extends Shape<'TotalResponse'> {}
/** A report row with --compare: the row and its comparison. */
export interface ComparedAggregateRow extends AggregateRow {
  comparison: Comparison;
}

/** The interfaces a $ref names. */
interface Named {
  Source: Source;
  Attribution: Attribution;
  ConversionRecord: ConversionRecord;
  BreakdownRow: BreakdownRow;
  AggregateRow: AggregateRow;
  Paging: Paging;
  ComparedFigures: ComparedFigures;
  Change: Change;
  Changes: Changes;
  Comparison: Comparison;
  PeriodFigures: PeriodFigures;
  TrendBucket: TrendBucket;
}

export interface SortKey {
  field: string;
  descending: boolean;
}

export interface Period {
  /** Inclusive calendar dates, YYYY-MM-DD, UTC. */
  dateFrom: string;
  dateTo: string;
}

export interface PageRequest {
  limit: number;
  offset: number;
  sort: SortKey[];
}

/** Page results come with the total, so "all pages" can be walked. */
export interface Page<T> {
  rows: T[];
  paging: Paging;
}

export const ATTRIBUTION_MODEL = 'last-click' as const;
export const WINDOW_DAYS = 30;
