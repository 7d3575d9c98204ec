/** API mode: the Backend as a client of the interface, paging and checking what comes back. */
import { lookupTexts, MAX_LOOKUP_VALUES, type Backend, type ContactReport, type DataCoverage, type IdResolution, type LookupKind, type LookupOptions, type OrderLookup, type RowStream } from '../backend.js';
import { ApiError, NotFoundError, UsageError } from '../errors.js';
import type { ValidateResponse } from '../model/validation.js';
import { addDays, EVERY_DATE, formatDate, formatQuery, MAX_LIMIT, parseItemsQuery } from '../model/query.js';
import type { AggregateRow, ConversionRecord, Page, PageRequest, TimeframesResponse, TotalResponse } from '../model/types.js';
import type { ItemsQuery, ReportQuery, TotalQuery, TrendQuery } from '../model/query.js';
import { ORDER_SEARCH } from '../model/parameters.js';
import { DATA_VERSION_HEADER } from '../model/shapes.js';
import { urlSegment } from '../model/url.js';
import { DataVersionChangedError, type ApiClient } from './client.js';
import { checkShape } from './shape.js';

/** The items endpoint, or the per-source alias when the query is fixed to a campaign (its path holds the campaign). */
function itemsPath(q: ItemsQuery): string {
  return q.campaignId === undefined ? 'conversions/items' : `campaigns/${urlSegment(q.campaignId)}/conversions`;
}

/** The request header that pins a page to a data version (none for a page not pinned). */
const pinned = (dataVersion: string | undefined): Record<string, string> => (dataVersion === undefined ? {} : { [DATA_VERSION_HEADER]: dataVersion });

/** --all met another data version than the first page's (a page of it, or a 412 for the version pinned): exit 5. */
function dataChanged(from: string, to: string | undefined): ApiError {
  return new ApiError(
    `the data changed while paging (from version ${from} to ${to ?? 'one the API did not name'}): the API no longer serves the data the first page came from, so the rows printed are incomplete; run the command again`,
  );
}


export interface ApiBackendOptions {
  /** Pages fetched at once when walking every page. */
  concurrency: number;
  /** The client of the delivery area (v4), when --delivery-api is known. */
  delivery?: ApiClient;
  onPage?: (fetched: number, total: number) => void;
  /** Today, for searching a server without the order look-up route (default: the clock). */
  now?: () => Date;
  /** Notes for a person on stderr (how far an order search went). */
  info?: (message: string) => void;
  /** The bearer token, for what it names itself (the plugin, a look-up); the client sends it. */
  token?: string;
}

/** The conversions of the last year's report, as a look-up reads them (one page, unchecked: any part of it may be missing). */
interface LookupReport {
  conversions?: { id?: string; source?: { smartflowId?: string | null }; breakdown?: { currency?: string }[] }[];
}

export class ApiBackend implements Backend {
  constructor(
    private readonly client: ApiClient,
    private readonly options: ApiBackendOptions = { concurrency: 4 },
  ) {}

  private async fetchReport(q: ReportQuery, page: { limit: number; offset: number }, dataVersion?: string): Promise<Page<AggregateRow>> {
    const params = { ...formatQuery('report', q), limit: String(page.limit), offset: String(page.offset) };
    const body = checkShape(q.compareTo === undefined ? 'ReportResponse' : 'ComparedReportResponse', await this.client.getJson('conversions', params, pinned(dataVersion)), this.client.url('conversions'));
    return { rows: body.conversions, paging: body.paging };
  }

  private async fetchItems(q: ItemsQuery, page: { limit: number; offset: number }, dataVersion?: string): Promise<Page<ConversionRecord>> {
    const path = itemsPath(q);
    const body = checkShape(
      'ItemsResponse',
      await this.client.getJson(path, { ...formatQuery('items', q), limit: String(page.limit), offset: String(page.offset) }, pinned(dataVersion)),
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

  /** GET /conversions/timeframes, checked. */
  async trend(q: TrendQuery): Promise<TimeframesResponse> {
    return checkShape(q.compareTo === undefined ? 'TimeframesResponse' : 'ComparedTimeframesResponse', await this.client.getJson('conversions/timeframes', formatQuery('trend', q)), this.client.url('conversions/timeframes'));
  }

  /** GET /conversions/total, checked. */
  async total(q: TotalQuery): Promise<TotalResponse> {
    return checkShape(q.compareTo === undefined ? 'TotalResponse' : 'ComparedTotalResponse', await this.client.getJson('conversions/total', formatQuery('total', q)), this.client.url('conversions/total'));
  }

  allReport(q: ReportQuery): Promise<RowStream<AggregateRow>> {
    return this.walk(q, (page, dataVersion) => this.fetchReport(q, page, dataVersion));
  }

  allItems(q: ItemsQuery): Promise<RowStream<ConversionRecord>> {
    return this.walk(q, (page, dataVersion) => this.fetchItems(q, page, dataVersion));
  }

  /**
   * Every page from the query's offset on: the first to learn totalCount and the
   * data version, then the rest a few at a time, each pinned to that version
   * (Convx-Data-Version), emitted in order as they complete. A page of another
   * version, or a 412 because the server no longer holds it, is an ApiError (exit
   * 5): the rows never mix two versions. A server that names no version gets the
   * count check alone.
   */
  private async walk<T>(
    q: PageRequest,
    fetchPage: (page: { limit: number; offset: number }, dataVersion?: string) => Promise<Page<T>>,
  ): Promise<RowStream<T>> {
    const first = await fetchPage({ limit: MAX_LIMIT, offset: q.offset });
    const total = first.paging.totalCount;
    const version = first.paging.dataVersion;
    const fetchPinned = (offset: number) =>
      fetchPage({ limit: MAX_LIMIT, offset }, version).catch((error: unknown) => {
        throw version !== undefined && error instanceof DataVersionChangedError ? dataChanged(version, error.current) : error;
      });
    const { concurrency, onPage } = this.options;
    const offsets: number[] = [];
    for (let offset = q.offset + MAX_LIMIT; offset < total; offset += MAX_LIMIT) offsets.push(offset);
    const expected = (offset: number) => Math.max(0, Math.min(MAX_LIMIT, total - offset));

    async function* rows(): AsyncGenerator<T> {
      const check = (page: Page<T>, offset: number) => {
        if (version !== undefined && page.paging.dataVersion !== version) throw dataChanged(version, page.paging.dataVersion);
        if (page.rows.length !== expected(offset) || page.paging.totalCount !== total) {
          throw new ApiError(
            `the result changed while paging: at offset ${offset} the API returned ${page.rows.length} row${page.rows.length === 1 ? '' : 's'} of ${page.paging.totalCount}, expected ${expected(offset)} of ${total}; run again`,
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
          const page = fetchPinned(offset);
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
    return { totalCount: total, ...(version !== undefined ? { dataVersion: version } : {}), rows: rows() };
  }

  /**
   * GET conversions/orders/{orderId}: the order over every date. A server without that route
   * (an older convx serve, another implementation) is searched a year at a time backwards
   * through the items endpoint, ORDER_SEARCH.spans years at most.
   */
  async findOrder(orderId: string): Promise<OrderLookup | undefined> {
    const path = `conversions/orders/${urlSegment(orderId)}`;
    const answer = await this.client.lookupJson(path);
    if (answer.found) return checkShape('OrderLookup', answer.body, this.client.url(path));
    if (!answer.routeMissing) return undefined;
    return this.searchOrder(orderId);
  }

  private async searchOrder(orderId: string): Promise<OrderLookup> {
    const today = formatDate((this.options.now ?? (() => new Date()))());
    const query = (dateFrom: string, dateTo: string) =>
      parseItemsQuery({ dateFrom, dateTo, orderId, sort: 'datetime', limit: String(MAX_LIMIT) });
    let dateTo = today;
    for (let year = 1; year <= ORDER_SEARCH.spans; year++) {
      const dateFrom = addDays(dateTo, 1 - ORDER_SEARCH.days);
      const page = await this.fetchItems(query(dateFrom, dateTo), { limit: MAX_LIMIT, offset: 0 });
      if (page.rows.length) {
        // The order lies at most 30 days after its click: from that day on, every transaction of it.
        const from = page.rows.reduce((min, r) => (r.attribution.datetime < min ? r.attribution.datetime : min), page.rows[0]!.attribution.datetime).slice(0, 10);
        const all = await this.fetchItems(query(from, today), { limit: MAX_LIMIT, offset: 0 });
        return { orderId, conversions: all.rows, reasons: [] };
      }
      this.options.info?.(`order ${orderId}: not in ${dateFrom}..${dateTo}; searching the year before`);
      dateTo = addDays(dateFrom, -1);
    }
    throw new NotFoundError(
      `order ${orderId} is not among the API's conversions of ${addDays(dateTo, 1)}..${today} (the API has no look-up by order id, so convx searched ${ORDER_SEARCH.spans} years back, a year at a time)`,
      'pass --from and --to to search an older period; the API does not say why an order is not a conversion',
    );
  }

  /** GET contacts/{contact}/conversions: a contact's conversions and clicks. */
  async contact(key: string): Promise<ContactReport | undefined> {
    const path = `contacts/${urlSegment(key)}/conversions`;
    const answer = await this.client.lookupJson(path);
    if (answer.found) return checkShape('ContactReport', answer.body, this.client.url(path));
    if (answer.routeMissing) {
      throw new UsageError(`the API at ${this.client.base} has no contact look-up (GET contacts/{contact}/conversions); convx contact works in local mode: --data DIR`);
    }
    return undefined;
  }

  /** GET ids/{id}: what an id names; undefined from a server without that route (the commands then say what they said before it). */
  async resolve(id: string): Promise<IdResolution | undefined> {
    const path = `ids/${urlSegment(id.trim())}`;
    if (id.trim() === '') return { id: '', matches: [], nearest: [], sources: [] };
    const answer = await this.client.lookupJson(path);
    return answer.found ? checkShape('IdResolution', answer.body, this.client.url(path)) : undefined;
  }

  async validateEmail(request: unknown): Promise<ValidateResponse> {
    const delivery = this.options.delivery;
    if (!delivery) {
      throw new UsageError('validation in API mode needs the delivery base URL: --delivery-api URL (e.g. https://host/v4) or CONVX_DELIVERY_API_URL');
    }
    const path = 'delivery/e-mail/validate';
    return checkShape('ValidateResponse', await delivery.postJson(path, request), delivery.url(path));
  }

  /**
   * The interface shows no tables, only conversions: the first and last attributed
   * transaction over every date (two one-row items requests), not the orders' or touches' range.
   */
  async coverage(): Promise<DataCoverage> {
    const edge = async (descending: boolean) => {
      const page = await this.fetchItems(
        { ...EVERY_DATE, sort: [{ field: 'datetime', descending }], limit: 1, offset: 0 },
        { limit: 1, offset: 0 },
      );
      return page.rows[0]?.datetime;
    };
    const first = await edge(false);
    const last = first === undefined ? undefined : await edge(true);
    const instant = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');
    return { conversions: first && last ? { from: instant(first), to: instant(last) } : null };
  }

  /**
   * Values for shell completion: the plugin the token names; the sources, smartflows and
   * currencies of the last 365 days' report (one page); no countries (the interface shows none).
   */
  async lookup(kind: LookupKind, options: LookupOptions = {}): Promise<string[]> {
    if (kind === 'plugins') {
      const { decodeJwt } = await import('jose');
      const plugin = this.options.token === undefined ? undefined : decodeJwt(this.options.token).plugin;
      return typeof plugin === 'string' ? lookupTexts([plugin], options.accept) : [];
    }
    if (kind === 'countries') return [];
    const stop = () => void this.client.close();
    options.signal?.addEventListener('abort', stop);
    try {
      const now = (this.options.now ?? (() => new Date()))();
      const body = (await this.client.getJson('conversions', {
        dateFrom: formatDate(new Date(now.getTime() - 365 * 86_400_000)),
        dateTo: formatDate(now),
        limit: String(MAX_LOOKUP_VALUES),
      })) as LookupReport;
      const rows = body.conversions ?? [];
      const values = {
        sources: () => rows.map((r) => r.id),
        smartflows: () => rows.map((r) => r.source?.smartflowId),
        currencies: () => rows.flatMap((r) => (r.breakdown ?? []).map((b) => b.currency)),
      }[kind]();
      return lookupTexts(values, options.accept);
    } finally {
      options.signal?.removeEventListener('abort', stop);
    }
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.options.delivery?.close();
  }
}
