/** The field names of the interface's objects, in the interface's order (tables 2.1 to 2.4), from their schemas. */
import { COMPONENT_SCHEMAS } from './shapes.js';

const fieldsOf = (name: keyof typeof COMPONENT_SCHEMAS): string[] => Object.keys(COMPONENT_SCHEMAS[name].properties);

export const SOURCE_FIELDS = fieldsOf('Source');
export const ATTRIBUTION_FIELDS = fieldsOf('Attribution');
export const RECORD_FIELDS = fieldsOf('ConversionRecord');
export const AGGREGATE_FIELDS = fieldsOf('AggregateRow');
export const BREAKDOWN_FIELDS = fieldsOf('BreakdownRow');
export const TREND_FIELDS = fieldsOf('TrendBucket');
export const PERIOD_FIGURE_FIELDS = fieldsOf('PeriodFigures');

const NESTED: Record<string, readonly string[]> = { attribution: ATTRIBUTION_FIELDS, source: SOURCE_FIELDS };

/** Top-level scalar fields: the ones a sort may name. */
export function scalarFields(fields: readonly string[]): string[] {
  return fields.filter((f) => !(f in NESTED) && f !== 'breakdown');
}

/** Scalar fields with nested objects flattened to dotted names; arrays (and a comparison, which --compare adds) left out. */
export function flatFields(fields: readonly string[]): string[] {
  return fields.flatMap((f) => (f in NESTED ? NESTED[f]!.map((n) => `${f}.${n}`) : f === 'breakdown' || f === 'comparison' ? [] : [f]));
}
