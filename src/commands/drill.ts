import type { Backend, IdMatch, KnownSource } from '../backend.js';
import { redactUrl } from '../config.js';
import type { Context } from '../context.js';
import { NotFoundError, UsageError } from '../errors.js';
import { defaultPeriod, EVERY_DATE, MAX_LIMIT, parseItemsQuery, parseReportQuery, type RawParams } from '../model/query.js';
import { field, filterNames, parameters, QUERY_PARAMETERS } from '../model/parameters.js';
import { SOURCE_TYPES } from '../model/types.js';
import { canonicalZone, UTC } from '../model/period.js';
import type { CommandFlags } from './options.js';
import { listItems } from './items.js';
import { commandFor, namesHint, nearestHint, sharesId, suggestion } from './ids.js';
import { defineHandler } from './registry.js';
import { chosenPeriod, defaultedPeriod, queryParams, unknownIds } from './shared.js';
import { shellWord } from '../words.js';

/** The parameters a detailUrl's query string may carry: what a per-source alias takes (the path fixes the source). */
const URL_PARAMETERS = parameters('items').filter((p) => !field(p, 'pathOnly') && (!field(p, 'source') || field(p, 'inAlias') === true));

/** What a drill target names: the source (its path, or an id), and a detailUrl's period and filters. */
export interface DrillTarget {
  /** The source: campaignId, smartflowId (and deliveryId), sourceType, sourceId. */
  source: RawParams;
  /** The rest of a detailUrl's query string: dateFrom, dateTo, country, currency ... (the flags override them). */
  query: RawParams;
  /** A whole URL's scheme and host (http://host:port), which drill does not ask: it drills the path where it reads. */
  origin?: string;
}

/**
 * The items filter behind an aggregate row: its detailUrl (one of the three per-source paths,
 * with the query string naming the source and carrying the row's period and filters), a source
 * id, or TYPE:ID.
 */
export function drillTarget(target: string): DrillTarget {
  // Messages quote the target with any password in it redacted.
  const shown = redactUrl(target);
  // a URL's scheme and host end at the first / ? or # (as URL reads them)
  const origin = /^[a-z]+:\/\/[^/?#]+/i.exec(target)?.[0];
  const withoutOrigin = target.slice(origin?.length ?? 0).replace(/#.*$/, '');
  const queryAt = withoutOrigin.indexOf('?');
  const path = queryAt < 0 ? withoutOrigin : withoutOrigin.slice(0, queryAt);
  const segments = path.split('/').filter(Boolean);
  const at = segments.indexOf('v1');
  const rest = at >= 0 ? segments.slice(at + 1) : segments;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new UsageError(`cannot read "${shown}": bad percent-encoding`);
    }
  };
  if (path.startsWith('/') || at >= 0) {
    let source: RawParams;
    if (rest[0] === 'campaigns' && rest.length === 3 && rest[2] === 'conversions') {
      source = { campaignId: decode(rest[1]!) };
    } else if (rest[0] === 'deliveries' && rest.length === 3 && rest[2] === 'conversions') {
      source = { smartflowId: decode(rest[1]!) };
    } else if (rest[0] === 'deliveries' && rest.length === 4 && rest[3] === 'conversions') {
      source = { smartflowId: decode(rest[1]!), deliveryId: decode(rest[2]!) };
    } else {
      throw new UsageError(
        `"${shown}" is not a detailUrl: expected /v1/campaigns/ID/conversions, /v1/deliveries/SMARTFLOW/conversions or /v1/deliveries/SMARTFLOW/DELIVERY/conversions`,
      );
    }
    const query: RawParams = {};
    for (const pair of queryAt < 0 ? [] : withoutOrigin.slice(queryAt + 1).split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const name = decode((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '));
      const value = decode((eq < 0 ? '' : pair.slice(eq + 1)).replace(/\+/g, ' '));
      const p = URL_PARAMETERS.find((q) => q.name === name);
      if (!p) {
        throw new UsageError(
          `"${shown}": ${name} is not a parameter of a detailUrl`,
          [],
          `a detailUrl's query string takes ${URL_PARAMETERS.map((q) => q.name).join(', ')}`,
        );
      }
      if (name in source || name in query) throw new UsageError(`"${shown}": ${name} is given more than once`);
      (field(p, 'source') ? source : query)[name] = value;
    }
    // the origin without a user name or password (URL's own), or as written where it does not parse (a redacted password)
    return { source, query, ...(origin ? { origin: URL.canParse(origin) ? new URL(origin).origin : redactUrl(origin) } : {}) };
  }
  const typed = /^(campaign|automation|smartflow):(.*)$/.exec(target.trim());
  if (typed && typed[2]!.trim() === '') throw new UsageError(`"${target.trim()}" names no id after its type: give ${typed[1]}:ID, or the id alone`);
  if (typed) return { source: { sourceType: typed[1], sourceId: typed[2]!.trim() }, query: {} };
  if (target.trim() === '') throw new UsageError(`give a detailUrl or a source id (types: ${SOURCE_TYPES.join(', ')})`);
  return { source: { sourceId: target.trim() }, query: {} };
}

/** The filters drill takes as flags (its target fixes the source), in the order an empty result names them. */
const DRILL_FILTERS = filterNames('items').filter((name) => {
  const p = QUERY_PARAMETERS.find((q) => q.name === name)!;
  return field(p, 'flag') !== undefined && !field(p, 'source');
});


const WHERE = 'in the data (no click and no row of sources has it)';

/** Two or more sources carry the name, id (of other types) or delivery id given: which, and how to drill one (by TYPE:ID where their ids are one). */
function ambiguous(id: string, matches: IdMatch[]): UsageError {
  const typed = sharesId(matches[0]!, matches);
  return new UsageError(
    `"${id}" names ${matches.length} sources: ${matches.map((m) => `${m.kind === 'source' ? m.type : m.kind} ${suggestion(m)}`).join(', ')}`,
    [],
    `drill one of them by its ${typed ? 'type and id' : 'id'}: ${commandFor({ ...matches[0]!, by: 'id' }, typed)}`,
  );
}

/**
 * The source a bare or typed id names, by the resolver (Backend.resolve): a source id as it is;
 * a smartflow, a delivery, a campaign id or a source's name as the filter that lists it; else
 * "not found" (exit 3) saying what the id is instead (an order, a contact) or the nearest
 * sources with their names. Undefined: the backend cannot tell (an API without GET ids/{id}).
 */
async function resolveSource(target: RawParams, backend: Backend): Promise<RawParams | undefined> {
  const resolution = await backend.resolve?.(target.sourceId!);
  if (!resolution) return undefined;
  const { id } = resolution;
  const type = target.sourceType;
  const ofType = (m: IdMatch) => (m.kind === 'source' ? type === undefined || m.type === type : type === undefined || type === 'smartflow');
  const hits = (kind: IdMatch['kind'], by: IdMatch['by']) => resolution.matches.filter((m) => m.kind === kind && m.by === by && ofType(m));
  const byId = hits('source', 'id');
  // A bare id that sources of two types carry (campaign and automation x-1) names two report rows: which one is asked?
  if (new Set(byId.map((m) => m.type)).size > 1) throw ambiguous(id, byId);
  if (byId.length) return target;
  if (hits('smartflow', 'id').length) return { smartflowId: id };
  const deliveries = hits('delivery', 'id');
  if (deliveries.length > 1) throw ambiguous(id, deliveries);
  if (deliveries.length) return { smartflowId: deliveries[0]!.smartflowId ?? '', deliveryId: id };
  if (hits('source', 'campaignId').length) return { campaignId: id };
  const named = hits('source', 'name');
  if (named.length > 1) throw ambiguous(id, named);
  if (named.length) return { sourceType: named[0]!.type ?? '', sourceId: named[0]!.id };
  const other = resolution.matches.filter((m) => m.kind === 'source' && m.by === 'id');
  if (other.length) throw new NotFoundError(`no ${type} ${id} in the data`, `it is ${other.map((m) => `${m.type}:${m.id}`).join(', ')}`);
  const elsewhere = resolution.matches.filter((m) => m.kind === 'order' || m.kind === 'contact');
  const known = resolution.sources.map(suggestion).join(', ') || 'none';
  throw new NotFoundError(
    `no ${type ?? 'source'} ${id} ${WHERE}`,
    elsewhere.length ? namesHint(resolution, elsewhere) : (nearestHint(resolution, ['source']) ?? nearestHint(resolution, ['smartflow', 'delivery']) ?? `known source ids: ${known}`),
  );
}

/**
 * "Not found" (exit 3) with the closest known ids, when the drill target names an id that no
 * click and no source of the data holds (local mode), or that no conversion of any date has
 * (API mode, where the interface shows conversions only).
 */
async function checkTarget(target: RawParams, backend: Backend, now: Date): Promise<void> {
  // Asked of the resolver as a bare id is, where there is one: local mode and a server with GET ids/{id} say the same.
  if (backend.resolve && (await checkByResolver(target, backend.resolve.bind(backend)))) return;
  let sources: KnownSource[];
  let where = WHERE;
  if (backend.knownSources) {
    sources = await backend.knownSources();
    // A dataset without orders or touches: the listing says that it cannot report.
    if (sources.length === 0) return;
  } else {
    // API mode: the interface shows conversions only. An id with a conversion at some date is
    // known (one row asked); else the sources of every date's report are the known ones.
    const any = await backend.items(parseItemsQuery({ ...target, ...EVERY_DATE, limit: '1' }, { campaignId: true }));
    if (any.paging.totalCount > 0) return;
    const report = await backend.report(parseReportQuery({ ...EVERY_DATE, limit: String(MAX_LIMIT) }, now));
    sources = report.rows.map((r) => ({
      type: r.source.type,
      id: r.source.id,
      campaignId: r.source.type === 'smartflow' ? null : r.source.campaignId,
      smartflowId: r.source.smartflowId,
      deliveryId: r.source.deliveryId,
    }));
    where = "among the API's conversions of any date";
  }
  const [unknown] = unknownIds(target, sources);
  if (unknown?.other.length) throw new NotFoundError(`${unknown.what} ${where.replace(/ \(.*\)$/, '')}`, `it is ${unknown.other.join(', ')}`);
  if (unknown) throw new NotFoundError(`${unknown.what} ${where}`, unknown.hint);
}

/**
 * The path's ids of a detailUrl (a campaign, a smartflow, a delivery of it) checked by the resolver:
 * "not found" (exit 3) with the nearest ids of the kind, as a bare id is. False where the resolver
 * cannot tell (an API without GET ids/{id}, or no path id to ask of); true once every id is known, or
 * where the data holds no source at all (the listing then says it cannot report).
 */
async function checkByResolver(target: RawParams, resolve: NonNullable<Backend['resolve']>): Promise<boolean> {
  const checks: [keyof RawParams, string, IdMatch['kind'], (m: IdMatch) => boolean][] = [
    // a campaign's id: its sources' campaign_id, else a campaign's or an automation's own id (docs/reporting.md)
    ['campaignId', 'campaign', 'source', (m) => m.kind === 'source' && m.type !== 'smartflow' && (m.by === 'campaignId' || m.by === 'id')],
    ['smartflowId', 'smartflow', 'smartflow', (m) => m.kind === 'smartflow' && m.by === 'id'],
    ['deliveryId', 'delivery', 'delivery', (m) => m.kind === 'delivery' && m.by === 'id' && (target.smartflowId === undefined || m.smartflowId === target.smartflowId)],
  ];
  // A bare id that reached here was not resolved (an API without GET ids/{id}): the other way asks.
  if (checks.every(([key]) => target[key] === undefined)) return false;
  for (const [key, noun, kind, known] of checks) {
    const id = target[key];
    if (id === undefined) continue;
    const resolution = await resolve(id);
    if (!resolution) return false;
    if (resolution.matches.some(known)) continue;
    if (resolution.matches.length === 0 && resolution.sources.length === 0) return true;
    // The id names something else (an order, a contact, a source of another kind): what, and the command for it.
    // The resolver names no near ids then.
    if (resolution.matches.length) throw new NotFoundError(`no ${noun} ${resolution.id} in the data`, namesHint(resolution, resolution.matches));
    const first = resolution.sources.map(suggestion).join(', ') || 'none';
    throw new NotFoundError(`no ${noun} ${resolution.id} ${WHERE}`, nearestHint(resolution, [kind]) ?? `known source ids: ${first}`);
  }
  return true;
}

/**
 * A detailUrl of another host than the API drill asks (or any host, in local mode): its path is
 * drilled where convx reads, not on that host, and a warning says so (a row copied from another
 * server's report would silently answer from this data).
 */
function warnOtherHost(ctx: Context, origin: string | undefined): void {
  if (origin === undefined) return;
  const api = ctx.settings.mode === 'api' && ctx.settings.api && URL.canParse(ctx.settings.api) ? new URL(ctx.settings.api).origin : undefined;
  if (api === origin) return;
  const where = api ? `the API at ${redactUrl(ctx.settings.api!)}` : `the dataset ${ctx.settings.data ?? 'given'}`;
  ctx.log.warn(`the detailUrl is of ${origin}, which drill does not ask: its path is drilled on ${where}`);
}

/** The bounds a detailUrl gives where its flag does not, as the note of a default period names them. */
function urlBounds(flags: { from?: string | undefined; to?: string | undefined }, query: RawParams): { from?: string; to?: string } {
  return {
    ...(flags.from === undefined && query.dateFrom !== undefined ? { from: "the detailUrl's dateFrom" } : {}),
    ...(flags.to === undefined && query.dateTo !== undefined ? { to: "the detailUrl's dateTo" } : {}),
  };
}

export default defineHandler<CommandFlags<'drill'>>({
  async run(ctx, args, flags) {
    const { source: target, query, origin } = drillTarget(args[0] ?? '');
    warnOtherHost(ctx, origin);
    // The period of the detailUrl, each bound overridden by its flag; without any, the period of a
    // default report: the 30 days ending today.
    // A detailUrl names its zone (none: a UTC row's), which only --tz overrides; the profile's zone is for a bare source id.
    const settings: { tz?: string; tzFrom?: string } = query.dateFrom !== undefined || query.dateTo !== undefined ? {} : ctx.settings;
    // A default period ends today in the zone (a zone the parser refuses below: UTC's today meanwhile).
    const zone = canonicalZone(flags.tz ?? query.timeZone ?? settings.tz ?? UTC) ?? UTC;
    // A short period (--month …) replaces the detailUrl's period as --from and --to do.
    const short = chosenPeriod(flags, ctx.io.now(), zone);
    const { dateFrom, dateTo } = short ?? defaultPeriod(flags.from ?? query.dateFrom, flags.to ?? query.dateTo, ctx.io.now(), zone);
    // The flags are checked first; on the opened backend, the target must be known before it is listed.
    const listed = (source: RawParams) => ({ ...query, ...queryParams('items', flags, settings), ...source, dateFrom, dateTo });
    await listItems(ctx, listed(target), flags.all ?? false, {
      // An empty result suggests `convx drill TARGET …` with drill's own flags, and the default period as such.
      command: `drill ${shellWord(redactUrl(args[0] ?? ''))}`,
      // A detailUrl's dateFrom and dateTo are given as the flags are: the default period's note names them.
      given: short === undefined ? { from: flags.from ?? query.dateFrom, to: flags.to ?? query.dateTo } : { from: dateFrom, to: dateTo },
      ...(short === undefined ? { givenBy: urlBounds(flags, query) } : {}),
      // the dates a short period or the defaults chose, named on stderr in any format (as report's)
      chosen: short?.chosen ?? defaultedPeriod({ from: flags.from ?? query.dateFrom, to: flags.to ?? query.dateTo }, zone === UTC ? undefined : zone, urlBounds(flags, query)),
      // an empty result names the source apart from the filters: the target is not a flag that can be left out
      // a detailUrl's user name and password never shown
      source: redactUrl(args[0] ?? ''),
      filters: DRILL_FILTERS,
      before: async (backend) => {
        const source = target.sourceId !== undefined ? await resolveSource(target, backend) : undefined;
        // A source id as given lists as parsed; a smartflow id, a delivery id or a name lists what it names.
        if (source) return source === target ? undefined : listed(source);
        await checkTarget(target, backend, ctx.io.now());
      },
    });
  },
});
