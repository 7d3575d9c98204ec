/** The field names of the interface's objects, in the interface's order (tables 2.1 to 2.4). */

export const SOURCE_FIELDS = [
  'type',
  'id',
  'name',
  'campaignId',
  'smartflowId',
  'smartflowName',
  'deliveryId',
  'deliveryName',
  'detailUrl',
] as const;

export const ATTRIBUTION_FIELDS = ['touch', 'datetime', 'hoursToConversion', 'model', 'windowDays'] as const;

export const RECORD_FIELDS = [
  'contactId',
  'clientContactId',
  'datetime',
  'orderId',
  'firstName',
  'surname',
  'conversionsAmount',
  'conversionsCurrency',
  'conversionsReferenceAmount',
  'referenceCurrency',
  'country',
  'isRefund',
  'attribution',
  'source',
  'activityUrl',
] as const;

export const AGGREGATE_FIELDS = [
  'id',
  'name',
  'source',
  'sourceStartedAt',
  'firstConversionAt',
  'lastConversionAt',
  'conversionsAmountWoTax',
  'conversionsAmountWTax',
  'conversionsNumber',
  'referenceCurrency',
  'uniqueContacts',
  'averageConversion',
  'averageUniqueConversion',
  'refundsAmountWoTax',
  'refundsAmountWTax',
  'refundsNumber',
  'grossConversionsAmountWoTax',
  'grossConversionsAmountWTax',
  'grossConversionsNumber',
  'breakdown',
] as const;

export const BREAKDOWN_FIELDS = [
  'currency',
  'conversionsAmountWoTax',
  'conversionsAmountWTax',
  'conversionsNumber',
  'averageConversion',
  'refundsAmountWoTax',
  'refundsAmountWTax',
  'refundsNumber',
  'grossConversionsAmountWoTax',
  'grossConversionsAmountWTax',
  'grossConversionsNumber',
  'conversionAmountWoTaxReference',
  'conversionAmountWTaxReference',
] as const;

const NESTED: Record<string, readonly string[]> = { attribution: ATTRIBUTION_FIELDS, source: SOURCE_FIELDS };

/** Top-level scalar fields: the ones a sort may name. */
export function scalarFields(fields: readonly string[]): string[] {
  return fields.filter((f) => !(f in NESTED) && f !== 'breakdown');
}

/** Scalar fields with nested objects flattened to dotted names; arrays left out. */
export function flatFields(fields: readonly string[]): string[] {
  return fields.flatMap((f) => (f in NESTED ? NESTED[f]!.map((n) => `${f}.${n}`) : f === 'breakdown' ? [] : [f]));
}
