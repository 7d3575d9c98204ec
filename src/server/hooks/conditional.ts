/**
 * Conditional requests: a report or items answer carries an ETag of the data version, the plugin
 * and the request, and the version itself (Convx-Data-Version); a matching If-None-Match is a 304,
 * sent without querying. A request may pin the data version it pages through.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Backend } from '../../backend.js';
import { DATA_VERSION_HEADER } from '../../model/shapes.js';
import { negotiateEncoding, requestParams, varyWith } from '../conventions.js';
import { entityTag, noneMatch } from '../etag.js';
import type { Held, ServedData } from '../plugins.js';
import { problem, ProblemError, unknownPlugin } from '../problem.js';
import type { DataWork } from './budget.js';

export interface ConditionalDeps {
  /** The plugin's data served now, or the one of a data version (DatasetHolder.byVersion, a plugin file's). */
  served: ServedData;
  data: DataWork;
  /** A 304 costs no query: it gives the token taken back (authenticate.ts Clients.giveBack). */
  giveBack: (request: FastifyRequest) => void;
  compression: boolean;
}

export type TaggedQuery = <T>(request: FastifyRequest, reply: FastifyReply, parsed: unknown, work: (backend: Backend) => Promise<T>) => Promise<T | FastifyReply>;

/**
 * A report or items query (budget.ts) whose answer carries the ETag and the data version; a
 * matching If-None-Match is a 304. The tag and the answer come from the same data even when a
 * reload swaps it meanwhile.
 */
export function taggedQueries(deps: ConditionalDeps): TaggedQuery {
  return async (request, reply, parsed, work) => {
    // The answer depends on the Convx-Data-Version the request sent (pinnedDataset): caches must know (304s too).
    reply.header('vary', varyWith(reply.getHeader('vary'), DATA_VERSION_HEADER));
    if (notModifiedNow(request, reply, parsed, deps)) return reply;
    // Held while the request waits for its turn, so that a reload (or the end of a pinned version's
    // grace, or the eviction of a plugin file) does not close this data before the request has its connection.
    const held = await pinnedDataset(request, deps);
    const { dataset } = held;
    let body;
    try {
      reply.header(DATA_VERSION_HEADER, dataset.version);
      const tag = tagOf(request, dataset.version, parsed);
      if (dataset.has(request.plugin) && noneMatch(request.headers['if-none-match'], tag)) return notModified(request, reply, tag, deps);
      body = await deps.data(request, work, async () => ({ dataset, release: () => undefined }));
      reply.header('etag', representationTag(request, tag, deps.compression));
    } finally {
      held.release();
    }
    return body;
  };
}

/** The data version a request pins (Convx-Data-Version), '' when none. */
function askedVersion(request: FastifyRequest): string {
  const header = request.headers[DATA_VERSION_HEADER.toLowerCase()];
  return (Array.isArray(header) ? header.join(', ') : (header ?? '')).trim();
}

/** The tag of an answer: the route (its pattern: the path's values are in the parsed query) and the parameters, not the URL as spelled. */
function tagOf(request: FastifyRequest, version: string, parsed: unknown): string {
  return entityTag(version, request.plugin, request.routeOptions.url ?? '', requestParams(request.query), parsed);
}

/** A 304 costs no query: it does not count against the rate limit (the token taken is given back). */
function notModified(request: FastifyRequest, reply: FastifyReply, tag: string, deps: ConditionalDeps): FastifyReply {
  deps.giveBack(request);
  return reply.code(304).header('etag', representationTag(request, tag, deps.compression)).send();
}

/**
 * A 304 known before the data is held: If-None-Match matches the tag of the version the plugin is
 * answered from now, and the request pins no other. A plugin's file that is not open stays closed
 * (versionOf gives the version the file has now, from its stat and header); a pinned older version,
 * or no match, goes the way of every answer (whose tag is then computed again, for the data held).
 */
function notModifiedNow(request: FastifyRequest, reply: FastifyReply, parsed: unknown, deps: ConditionalDeps): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  const current = ifNoneMatch === undefined ? undefined : deps.served.versionOf(request.plugin);
  if (current === undefined || !deps.served.has(request.plugin)) return false;
  const asked = askedVersion(request);
  if (asked !== '' && asked !== current) return false;
  const tag = tagOf(request, current, parsed);
  if (!noneMatch(ifNoneMatch, tag)) return false;
  reply.header(DATA_VERSION_HEADER, current);
  notModified(request, reply, tag, deps);
  return true;
}

/**
 * The data a report or items request is answered from: the version its Convx-Data-Version
 * header pins it to, while the server holds that version (the one served now, or the one a
 * reload replaced, within the grace period), else the one served now. A pinned version no
 * longer (or never) held is a 412 naming both versions.
 */
async function pinnedDataset(request: FastifyRequest, { served }: ConditionalDeps): Promise<Held> {
  const asked = askedVersion(request);
  const held = await served.hold(request.plugin, asked === '' ? undefined : asked);
  if (held) return held;
  const current = served.versionOf(request.plugin);
  // A reload may have removed the plugin's file since its token was checked.
  if (asked === '' || current === undefined) throw unknownPlugin(request.plugin);
  const named = JSON.stringify(asked.length > 64 ? `${asked.slice(0, 64)}…` : asked);
  throw new ProblemError(
    {
      ...problem(
        'dataVersionChanged',
        `the data changed: version ${named} (${DATA_VERSION_HEADER}) is no longer served, the data served now is version "${current}"; ` +
          'start paging again from the first page',
      ),
      requestedVersion: asked.slice(0, 64),
      currentVersion: current,
    },
    { [DATA_VERSION_HEADER]: current },
  );
}

/**
 * The tag of the representation a request gets: a compressed one is another sequence of bytes,
 * so it carries the weak form (RFC 9110 8.8.1); decided from Accept-Encoding alone, so that a
 * 304 carries the tag the 200 would have (If-None-Match compares weakly: both forms match).
 */
function representationTag(request: FastifyRequest, tag: string, compression: boolean): string {
  return compression && negotiateEncoding(request.headers['accept-encoding']) ? `W/${tag}` : tag;
}
