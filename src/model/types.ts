/** JSON shapes of the reporting interface (interface document, tables 2.1 to 2.5). */

export const SOURCE_TYPES = ['campaign', 'automation', 'smartflow'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export interface Source {
  type: SourceType;
  id: string;
  name: string;
  campaignId: string;
  smartflowId: string | null;
  smartflowName: string | null;
  deliveryId: string | null;
  deliveryName: string | null;
  detailUrl: string;
}

export interface Attribution {
  touch: string;
  datetime: string;
  hoursToConversion: number;
  model: 'last-click';
  windowDays: number;
}

export interface ConversionRecord {
  contactId: string;
  clientContactId: string | null;
  datetime: string;
  orderId: string;
  firstName: string | null;
  surname: string | null;
  conversionsAmount: number;
  conversionsCurrency: string;
  conversionsReferenceAmount: number;
  referenceCurrency: string;
  country: string | null;
  isRefund: boolean;
  attribution: Attribution;
  source: Source;
  activityUrl: string;
}

export interface BreakdownRow {
  currency: string;
  conversionsAmountWoTax: number;
  conversionsAmountWTax: number;
  conversionsNumber: number;
  averageConversion: number;
  refundsAmountWoTax: number;
  refundsAmountWTax: number;
  refundsNumber: number;
  grossConversionsAmountWoTax: number;
  grossConversionsAmountWTax: number;
  grossConversionsNumber: number;
  conversionAmountWoTaxReference: number;
  conversionAmountWTaxReference: number;
}

export interface AggregateRow {
  id: string;
  name: string;
  source: Source;
  sourceStartedAt: string | null;
  firstConversionAt: string | null;
  lastConversionAt: string | null;
  conversionsAmountWoTax: number;
  conversionsAmountWTax: number;
  conversionsNumber: number;
  referenceCurrency: string;
  uniqueContacts: number;
  averageConversion: number;
  averageUniqueConversion: number;
  refundsAmountWoTax: number;
  refundsAmountWTax: number;
  refundsNumber: number;
  grossConversionsAmountWoTax: number;
  grossConversionsAmountWTax: number;
  grossConversionsNumber: number;
  breakdown: BreakdownRow[];
}

export interface Paging {
  start: number;
  count: number;
  totalCount: number;
}

export interface ItemsResponse {
  conversions: ConversionRecord[];
  paging: Paging;
}

export interface ReportResponse {
  conversions: AggregateRow[];
  paging: Paging;
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

export interface ReportQuery extends Period, PageRequest {
  country?: string[];
  currency?: string[];
  q?: string;
}

export interface ItemsQuery extends Period, PageRequest {
  sourceId?: string;
  sourceType?: SourceType;
  smartflowId?: string;
  deliveryId?: string;
  /** Not an interface parameter: the per-source alias /campaigns/{campaignId}/conversions fixes it. */
  campaignId?: string;
  contactId?: string;
  orderId?: string;
  country?: string[];
  currency?: string[];
}

/** Page results come with the total, so "all pages" can be walked. */
export interface Page<T> {
  rows: T[];
  paging: Paging;
}

export const ATTRIBUTION_MODEL = 'last-click' as const;
export const WINDOW_DAYS = 30;
