/**
 * The routes table: every operation of the API, one row each (an alias of the items is a row of
 * its own), registered in one place by router.ts. A row documents its operation (method, path,
 * operation id, the kind whose responses model/schemas.ts holds, the query string) and answers
 * it thinly: parse (model/query.ts, the one validation) -> the Backend -> the body.
 */
import { contactsCarrying, type ActivityTarget, type Backend } from '../backend.js';
import { UsageError } from '../errors.js';
import { parseItemsQuery, parseNoQuery, parseReportQuery, parseTotalQuery, parseTrendQuery, type ItemsQuery, type RequestParams } from '../model/query.js';
import { ALIAS_QUERY, DAILY_QUERY, ITEMS_QUERY, NO_QUERY, REPORT_QUERY, TOTAL_QUERY, TREND_QUERY, type OperationKind } from '../model/schemas.js';
import type { Page } from '../model/types.js';
import { problem, ProblemError } from './problem.js';

/** What a row's parser reads: the query string as the shared parser takes it, the path's values, the body, the clock. */
export interface RouteInput {
  query: RequestParams;
  params: Record<string, string>;
  body: unknown;
  now: () => Date;
}

interface RouteDoc {
  method: 'GET' | 'POST';
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The operation's kind: its documented responses and request headers (model/schemas.ts). */
  kind: OperationKind;
  /** The query string as documented (the parser alone validates it); none: not documented. */
  querystring?: object;
}

/** An operation on the token's plugin's data, within the time budget and a fair turn (hooks/budget.ts). */
export interface DataRoute<Parsed> extends RouteDoc {
  /** 'etag': an ETag (a matching If-None-Match is a 304) and the data version a request may pin (hooks/conditional.ts); 'query': the data served now. */
  answer: 'etag' | 'query';
  parse(input: RouteInput): Parsed;
  handler(backend: Backend, parsed: Parsed): Promise<unknown> | undefined;
  /** A look-up: what the 404 problem says when the handler finds nothing (undefined). */
  missing?(parsed: Parsed): string;
  /** A validation holds its connection while it waits for template renders: it gets one of its own, so it never keeps the pool from reports. */
  ownConnection?: true;
  /** Only an application/json body reaches the handler (else the 415 problem). */
  jsonBody?: true;
}

/** An operation answered without a token or a query (liveness). */
export interface PublicRoute extends RouteDoc {
  answer: 'public';
  handler(served: { loadedAt: Date; reloadFailedAt?: Date | undefined; dataVersion?: string | undefined }): unknown;
}

export type RouteRow = DataRoute<unknown> | PublicRoute;

/** A row on the data, its parser's type checked against its handler's. */
const data = <Parsed>(row: DataRoute<Parsed>): DataRoute<unknown> => row;

const pageBody = <Row>(page: Page<Row>) => ({ conversions: page.rows, paging: page.paging });

/** The items, or a per-source alias: its path fixes the source; its query string may only narrow within it (sourceType, sourceId). */
function itemsParser(fixed?: (params: Record<string, string>) => Partial<ItemsQuery>) {
  return ({ query, params }: RouteInput): ItemsQuery => {
    const parsed = parseItemsQuery(query, { sourceFilters: fixed === undefined });
    const path = fixed?.(params) ?? {};
    // An empty path segment (/v1/campaigns//conversions) names no source.
    const empty = Object.entries(path).filter(([, value]) => value === '').map(([parameter]) => ({ parameter, message: 'is empty in the path' }));
    if (empty.length) throw new UsageError(`invalid parameters: ${empty.map((p) => `${p.parameter}: ${p.message}`).join('; ')}`, empty);
    return { ...parsed, ...path };
  };
}

const items = (row: Pick<RouteDoc, 'path' | 'operationId' | 'summary' | 'querystring'>, fixed?: (params: Record<string, string>) => Partial<ItemsQuery>) =>
  data({ ...row, method: 'GET', kind: 'items', answer: 'etag', parse: itemsParser(fixed), handler: async (b, parsed) => pageBody(await b.items(parsed)) });

/** A GET of the period's figures (a series, a total): tagged like the report, parsed by the one parser. */
const etagged = <Parsed>(
  row: Pick<RouteDoc, 'path' | 'operationId' | 'summary' | 'kind' | 'querystring'>,
  parse: (input: RouteInput) => Parsed,
  handler: (backend: Backend, parsed: Parsed) => Promise<unknown>,
) => data({ ...row, method: 'GET', answer: 'etag', parse, handler });

/** A look-up by id (issue 12): no query string; what the plugin's backend finds, else a 404 problem. */
const lookup = (
  row: Pick<RouteDoc, 'path' | 'operationId' | 'summary' | 'kind'>,
  handler: (backend: Backend, params: Record<string, string>) => Promise<unknown> | undefined,
  missing: (params: Record<string, string>) => string,
) =>
  data({
    ...row,
    method: 'GET',
    querystring: NO_QUERY,
    answer: 'query',
    parse: ({ query, params }) => {
      parseNoQuery(query);
      return params;
    },
    handler,
    missing,
  });

/**
 * A contact by key, as GET contacts/{key} answers it: a key that is the e-mail address or client
 * contact id of several contacts (their first rows, by the resolver) is a 409 naming their ids, never
 * one of them picked; `convx contact` refuses such a key the same way, in both modes.
 */
async function oneContact(b: Backend, key: string): Promise<unknown> {
  const report = await b.contact(key);
  if (!report || report.matchedBy === 'contactId') return report;
  const { contacts } = await contactsCarrying(b, key, report.matchedBy);
  if (contacts.length < 2) return report;
  const ids = contacts.map((m) => m.id);
  const what = report.matchedBy === 'email' ? 'the e-mail address' : 'the client contact id';
  throw new ProblemError({
    ...problem('ambiguousKey', `${JSON.stringify(key)} is ${what} of ${ids.length} contacts: ${ids.join(', ')}; look one of them up by its contact id`),
    matchedBy: report.matchedBy,
    contactIds: ids,
  });
}

const activity = (target: (p: Record<string, string>) => ActivityTarget) => (b: Backend, p: Record<string, string>) => b.activity?.(target(p), p.contactId!);
const noActivity = (p: Record<string, string>) => `contact ${p.contactId} has no touches of this source`;

export const ROUTES: readonly RouteRow[] = [
  data({
    method: 'GET',
    path: '/v1/conversions',
    operationId: 'getConversions',
    summary: 'One aggregate row per attributing source',
    kind: 'report',
    querystring: REPORT_QUERY,
    answer: 'etag',
    parse: ({ query, now }) => parseReportQuery(query, now()),
    handler: async (b, parsed) => pageBody(await b.report(parsed)),
  }),
  etagged(
    {
      path: '/v1/conversions/timeframes',
      operationId: 'getConversionTimeframes',
      summary: 'The figures of every bucket (hour, day, ISO week or month) of the period, over every source or per source',
      kind: 'trend',
      querystring: TREND_QUERY,
    },
    ({ query, now }) => parseTrendQuery(query, now()),
    (b, parsed) => b.trend(parsed),
  ),
  etagged(
    { path: '/v1/conversions/daily', operationId: 'getDailyConversions', summary: 'The figures of every day of the period (timeframes by day)', kind: 'trend', querystring: DAILY_QUERY },
    ({ query, now }) => parseTrendQuery(query, now(), 'day'),
    (b, parsed) => b.trend(parsed),
  ),
  etagged(
    { path: '/v1/conversions/total', operationId: 'getConversionsTotal', summary: "The period's figures over every source as one row", kind: 'total', querystring: TOTAL_QUERY },
    ({ query, now }) => parseTotalQuery(query, now()),
    (b, parsed) => b.total(parsed),
  ),
  items({ path: '/v1/conversions/items', operationId: 'listConversionItems', summary: 'Individual conversion records', querystring: ITEMS_QUERY }),
  items(
    { path: '/v1/campaigns/:campaignId/conversions', operationId: 'listCampaignConversions', summary: 'Conversions of a campaign or automation', querystring: ALIAS_QUERY },
    (p) => ({ campaignId: p.campaignId }),
  ),
  items(
    { path: '/v1/deliveries/:smartflowId/conversions', operationId: 'listSmartflowConversions', summary: 'Conversions of a smartflow', querystring: ALIAS_QUERY },
    (p) => ({ smartflowId: p.smartflowId }),
  ),
  items(
    {
      path: '/v1/deliveries/:smartflowId/:deliveryId/conversions',
      operationId: 'listDeliveryConversions',
      summary: 'Conversions of one delivery of a smartflow',
      querystring: ALIAS_QUERY,
    },
    (p) => ({ smartflowId: p.smartflowId, deliveryId: p.deliveryId }),
  ),
  lookup(
    {
      path: '/v1/conversions/orders/:orderId',
      kind: 'order',
      operationId: 'getOrderConversions',
      summary: 'An order by id over every date: its conversions (the order and its refunds), or why it is not one',
    },
    (b, p) => b.findOrder(p.orderId!),
    (p) => `order ${p.orderId} is not in the dataset`,
  ),
  lookup(
    {
      path: '/v1/contacts/:contact/conversions',
      kind: 'contact',
      operationId: 'getContactConversions',
      summary: 'A contact (by contact id, e-mail or client contact id): its conversions, and each click with the orders it decided or why it decided none',
    },
    (b, p) => oneContact(b, p.contact!),
    (p) => `no contact ${p.contact} (by contact id, e-mail or client contact id) in the dataset`,
  ),
  lookup(
    {
      path: '/v1/ids/:id',
      kind: 'ids',
      operationId: 'resolveId',
      summary:
        'What an id names (an order; a contact by id, e-mail or client contact id; a source by id, name or campaign id; a smartflow; a delivery), else the ids nearest it with their names: what convx order, contact and drill say of an id they do not find',
    },
    (b, p) => b.resolve?.(p.id!),
    (p) => `cannot look up ${p.id}`,
  ),
  lookup(
    {
      path: '/v1/campaigns/:campaignId/recipients/:contactId/activity',
      kind: 'activity',
      operationId: 'getCampaignRecipientActivity',
      summary: "A contact's touches of a campaign or automation (a record's activityUrl)",
    },
    activity((p) => ({ campaignId: p.campaignId! })),
    noActivity,
  ),
  lookup(
    {
      path: '/v1/deliveries/:smartflowId/recipients/:contactId/activity',
      kind: 'activity',
      operationId: 'getSmartflowRecipientActivity',
      summary: "A contact's touches of a smartflow node without a delivery (a record's activityUrl)",
    },
    activity((p) => ({ smartflowId: p.smartflowId! })),
    noActivity,
  ),
  lookup(
    {
      path: '/v1/deliveries/:smartflowId/:deliveryId/recipients/:contactId/activity',
      kind: 'activity',
      operationId: 'getDeliveryRecipientActivity',
      summary: "A contact's touches of one delivery of a smartflow (a record's activityUrl)",
    },
    activity((p) => ({ smartflowId: p.smartflowId!, deliveryId: p.deliveryId! })),
    noActivity,
  ),
  data({
    method: 'POST',
    path: '/v4/delivery/e-mail/validate',
    operationId: 'validateEmailDelivery',
    summary: 'Dry run of an e-mail delivery: audience, suppression, languages, rendered samples and findings',
    description: 'Findings, including an invalid request body, are in render.errors and render.warnings of a 200 answer.',
    kind: 'validate',
    // Its SQL (the audience) runs under the same time budget as a report; templates have their own limits.
    answer: 'query',
    ownConnection: true,
    jsonBody: true,
    parse: ({ body }) => body,
    handler: (b, body) => b.validateEmail(body),
  }),
  {
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness, the time the dataset was loaded and its version, and whether the latest reload failed',
    kind: 'health',
    answer: 'public',
    handler: ({ loadedAt, reloadFailedAt, dataVersion }) => ({
      status: 'ok',
      loadedAt: loadedAt.toISOString(),
      ...(reloadFailedAt ? { reloadFailedAt: reloadFailedAt.toISOString() } : {}),
      // a monitor tells which data is served, after a reload too
      ...(dataVersion ? { dataVersion } : {}),
    }),
  },
];
