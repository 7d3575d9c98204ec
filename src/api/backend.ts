/** API mode: the Backend as a client of the interface, paging and checking what comes back. */
import type { Backend, RowStream } from '../backend.js';
import { ApiError, UsageError } from '../errors.js';
import type { ValidateResponse } from '../model/validation.js';
import { MAX_LIMIT } from '../model/query.js';
import type { AggregateRow, ConversionRecord, ItemsQuery, Page, PageRequest, ReportQuery, SortKey } from '../model/types.js';
import type { ApiClient } from './client.js';
import { checkShape } from './shape.js';

type Params = Record<string, string | undefined>;

function sortParam(sort: SortKey[]): string {
  return sort.map((k) => (k.descending ? '-' : '') + k.field).join(',');
}

const list = (values?: string[]) => (values?.length ? values.join(',') : undefined);

function reportParams(q: ReportQuery): Params {
  return { dateFrom: q.dateFrom, dateTo: q.dateTo, country: list(q.country), currency: list(q.currency), q: q.q, sort: sortParam(q.sort) };
}

/** The items endpoint, or the per-source alias when the query is fixed to a campaign. */
function itemsRequest(q: ItemsQuery): { path: string; params: Params } {
  const params: Params = {
    dateFrom: q.dateFrom,
    dateTo: q.dateTo,
    sourceId: q.sourceId,
    sourceType: q.sourceType,
    smartflowId: q.smartflowId,
    deliveryId: q.deliveryId,
    contactId: q.contactId,
    orderId: q.orderId,
    country: list(q.country),
    currency: list(q.currency),
    sort: sortParam(q.sort),
  };
  if (q.campaignId === undefined) return { path: 'conversions/items', params };
  return { path: `campaigns/${encodeURIComponent(q.campaignId)}/conversions`, params };
}

export interface ApiBackendOptions {
  /** Pages fetched at once when walking every page. */
  concurrency: number;
  /** The client of the delivery area (v4), when --delivery-api is known. */
  delivery?: ApiClient;
  onPage?: (fetched: number, total: number) => void;
}

export class ApiBackend implements Backend {
  constructor(
    private readonly client: ApiClient,
    private readonly options: ApiBackendOptions = { concurrency: 4 },
  ) {}

  private async fetchReport(q: ReportQuery, page: { limit: number; offset: number }): Promise<Page<AggregateRow>> {
    const params = { ...reportParams(q), limit: String(page.limit), offset: String(page.offset) };
    const body = checkShape('ReportResponse', await this.client.getJson('conversions', params), this.client.url('conversions'));
    return { rows: body.conversions, paging: body.paging };
  }

  private async fetchItems(q: ItemsQuery, page: { limit: number; offset: number }): Promise<Page<ConversionRecord>> {
    const { path, params } = itemsRequest(q);
    const body = checkShape(
      'ItemsResponse',
      await this.client.getJson(path, { ...params, limit: String(page.limit), offset: String(page.offset) }),
      this.client.url(path),
    );
    return { rows: body.conversions, paging: body.paging };
  }

  report(q: ReportQuery): Promise<Page<AggregateRow>> {
    return this.fetchReport(q, q);
  }

  items(q: ItemsQuery): Promise<Page<ConversionRecord>> {
    return this.fetchItems(q, q);
  }

  allReport(q: ReportQuery): Promise<RowStream<AggregateRow>> {
    return this.walk(q, (page) => this.fetchReport(q, page));
  }

  allItems(q: ItemsQuery): Promise<RowStream<ConversionRecord>> {
    return this.walk(q, (page) => this.fetchItems(q, page));
  }

  /**
   * Every page from the query's offset on: the first to learn totalCount, then
   * the rest a few at a time, emitted in order as they complete.
   */
  private async walk<T>(
    q: PageRequest,
    fetchPage: (page: { limit: number; offset: number }) => Promise<Page<T>>,
  ): Promise<RowStream<T>> {
    const first = await fetchPage({ limit: MAX_LIMIT, offset: q.offset });
    const total = first.paging.totalCount;
    const { concurrency, onPage } = this.options;
    const offsets: number[] = [];
    for (let offset = q.offset + MAX_LIMIT; offset < total; offset += MAX_LIMIT) offsets.push(offset);
    const expected = (offset: number) => Math.max(0, Math.min(MAX_LIMIT, total - offset));

    async function* rows(): AsyncGenerator<T> {
      const check = (page: Page<T>, offset: number) => {
        if (page.rows.length !== expected(offset) || page.paging.totalCount !== total) {
          throw new ApiError(
            `the result changed while paging: at offset ${offset} the API returned ${page.rows.length} rows of ${page.paging.totalCount}, expected ${expected(offset)} of ${total}; run again`,
          );
        }
      };
      check(first, q.offset);
      let fetched = first.rows.length;
      onPage?.(fetched, total - q.offset);
      yield* first.rows;
      const inFlight: { offset: number; page: Promise<Page<T>> }[] = [];
      let next = 0;
      const fill = () => {
        while (inFlight.length < concurrency && next < offsets.length) {
          const offset = offsets[next++]!;
          const page = fetchPage({ limit: MAX_LIMIT, offset });
          page.catch(() => undefined); // awaited below, in order
          inFlight.push({ offset, page });
        }
      };
      fill();
      while (inFlight.length) {
        const { offset, page } = inFlight.shift()!;
        const result = await page;
        check(result, offset);
        fill();
        fetched += result.rows.length;
        onPage?.(fetched, total - q.offset);
        yield* result.rows;
      }
    }
    return { totalCount: total, rows: rows() };
  }

  async validateEmail(request: unknown): Promise<ValidateResponse> {
    const delivery = this.options.delivery;
    if (!delivery) {
      throw new UsageError('validation in API mode needs the delivery base URL: --delivery-api URL (e.g. https://host/v4) or CONVX_DELIVERY_API_URL');
    }
    const path = 'delivery/e-mail/validate';
    return checkShape('ValidateResponse', await delivery.postJson(path, request), delivery.url(path));
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.options.delivery?.close();
  }
}
