/**
 * The dry run of an e-mail delivery over a dataset's contacts and assets
 * (DESIGN.md section 5). The audience, its deduplication and suppression are
 * SQL over every contact; templates and HTML are checked once per asset.
 * Templates are parsed and rendered in the sandbox, within the render limits.
 */
import { TooLargeError } from '../errors.js';
import {
  HTML_EXCERPT_CHARS,
  invalidResponse,
  MAX_ASSETS,
  MAX_AUDIENCE_IDS,
  normalizeRequest,
  NO_LANGUAGE,
  SAMPLE_SUBJECT_CHARS,
  type AssetInput,
  type Finding,
  type InlineAsset,
  type NormalizedRequest,
  type ValidateResponse,
} from '../model/validation.js';
import { checkHtml, cut, excerpt } from '../validation/html.js';
import { DEFAULT_RENDER_LIMITS, limitFlag, limitValue, type RenderLimits } from '../validation/limits.js';
import { TemplateSandbox, type LimitOutcome } from '../validation/sandbox.js';
import { printedVariables, templateMessage } from '../validation/templates.js';
import { ident, type Database, type Row, type SqlParams } from './db.js';
import type { Scope } from './attribution.js';

/**
 * An address as the HTML standard's e-mail input accepts it, with a dot in the
 * domain: what a mail server will take, checked in SQL over every contact.
 */
export const EMAIL_PATTERN =
  "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

const FIELDS = ['subject', 'preheader', 'html', 'text'] as const;
type Field = (typeof FIELDS)[number];

interface ResolvedAsset {
  ref: string;
  language: string | null;
  content: Partial<Record<Field, string>>;
}

const AUDIENCE = 'convx_validation_audience';
/** The most distinct printed variables of one asset counted for unresolved_variable (one SQL column each). */
const MAX_CHECKED_VARIABLES = 500;

/**
 * A list of strings as one parameter: a JSON array that DuckDB reads into a
 * list, as a subquery for IN. One value however long the list (a parameter per
 * value makes the statement grow with it, and its preparation worse than linear).
 */
function listParam(params: SqlParams, name: string, values: readonly string[]): string {
  params[name] = JSON.stringify(values);
  return `(SELECT unnest(from_json(CAST($${name} AS JSON), '["VARCHAR"]')))`;
}

/** Refuses a request over the documented sizes before any work is done. */
export function checkRequestSize(request: NormalizedRequest): void {
  const { lists, contactIds, excludeLists, languages = [], countries = [] } = request.audience;
  const entries = lists.length + contactIds.length + excludeLists.length + languages.length + countries.length;
  if (entries > MAX_AUDIENCE_IDS) {
    throw new TooLargeError(
      `the audience lists ${entries.toLocaleString('en-US')} entries (lists, contactIds, excludeLists, languages and countries together); at most ${MAX_AUDIENCE_IDS.toLocaleString('en-US')} are allowed: validate a list, or split the ids`,
      'maxAudienceIds',
    );
  }
  if (request.assets.length > MAX_ASSETS) {
    throw new TooLargeError(`the request gives ${request.assets.length} assets; at most ${MAX_ASSETS} are allowed (one per language)`, 'maxAssets');
  }
}

const camel = (column: string) => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export async function validateDelivery(
  scope: Scope,
  db: Database,
  body: unknown,
  limits: RenderLimits = DEFAULT_RENDER_LIMITS,
  plugin: string | undefined = scope.plugin ?? undefined,
): Promise<ValidateResponse> {
  const startedAt = Date.now();
  const { request, problems } = normalizeRequest(body);
  if (!request) return invalidResponse(problems);
  checkRequestSize(request);
  if (!scope.dataset.has('contacts')) {
    return invalidResponse([{ code: 'invalid_request', message: 'the dataset has no contacts table, so there is no audience to validate' }]);
  }
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  // Opened now: the time limit runs from the start, and the plugin is owed a renderer from now on.
  const sandbox = request.resolveOnly ? undefined : new TemplateSandbox(limits, { startedAt, ...(plugin === undefined ? {} : { key: plugin }) });
  try {
    await selectAudience(scope, db, request);
    const counts = (await db.one<Row>(`
      SELECT count(*) AS intended,
        count(*) FILTER (WHERE suppression IS NOT NULL) AS suppressed,
        count(*) FILTER (WHERE suppression = 'unsubscribed') AS unsubscribed,
        count(*) FILTER (WHERE suppression = 'invalidEmail') AS invalid_email,
        count(*) FILTER (WHERE suppression = 'noConsent') AS no_consent,
        coalesce(sum(duplicates), 0) AS duplicates
      FROM ${AUDIENCE}`))!;
    const n = (key: string) => Number(counts[key] ?? 0);
    if (n('duplicates') > 0) {
      warnings.push({
        code: 'duplicate_email',
        message: `${plural(n('duplicates'), 'contact')} share an e-mail address with another in the audience and will not get a second copy`,
        count: n('duplicates'),
      });
    }
    const byLanguage = await db.all<{ lang: string; n: bigint }>(
      `SELECT lang, count(*) AS n FROM ${AUDIENCE} WHERE suppression IS NULL GROUP BY lang ORDER BY n DESC, lang`,
    );

    const assets = await resolveAssets(scope, db, request.assets, errors);
    const forLanguage = new Map<string, ResolvedAsset>();
    const fallback = assets.filter((a) => a.language === null);
    for (const asset of assets) {
      if (asset.language === null) continue;
      if (forLanguage.has(asset.language)) {
        errors.push({
          code: 'duplicate_asset_language',
          message: `${forLanguage.get(asset.language)!.ref} and ${asset.ref} are both for language ${asset.language}; which one would be sent?`,
          assetRef: asset.ref,
          language: asset.language,
        });
      } else forLanguage.set(asset.language, asset);
    }
    if (fallback.length > 1) {
      errors.push({
        code: 'duplicate_asset_language',
        message: `${fallback.map((a) => a.ref).join(' and ')} all have no language; at most one asset may be the fallback`,
        assetRef: fallback[1]!.ref,
      });
    }

    const languages: ValidateResponse['languages'] = [];
    const recipientsOf = new Map<ResolvedAsset, string[]>();
    for (const { lang, n: count } of byLanguage) {
      const recipients = Number(count);
      const asset = forLanguage.get(lang) ?? fallback[0];
      if (!asset) {
        errors.push({
          code: 'no_asset_for_language',
          message: `no asset for language ${lang} and no asset without a language to fall back on; ${plural(recipients, 'recipient')} would get nothing`,
          language: lang,
          count: recipients,
        });
        continue;
      }
      if (!forLanguage.has(lang)) {
        warnings.push({
          code: 'language_fallback',
          message: `${plural(recipients, 'recipient')} in language ${lang} get ${asset.ref}, which has no language`,
          language: lang,
          assetRef: asset.ref,
          count: recipients,
        });
      }
      languages.push({ language: lang, recipients, assetRef: asset.ref });
      recipientsOf.set(asset, [...(recipientsOf.get(asset) ?? []), lang]);
    }
    const deliverable = n('intended') - n('suppressed');
    if (deliverable === 0) {
      errors.push({
        code: 'no_recipients',
        message:
          n('intended') === 0
            ? 'the audience selects no contacts'
            : `all ${plural(n('intended'), 'contact')} of the audience are suppressed`,
        count: 0,
      });
    }

    const samples: ValidateResponse['render']['samples'] = [];
    if (sandbox) {
      const work = new TemplateWork(sandbox, errors);
      const contactColumns = await audienceColumns(db);
      for (const asset of assets) {
        const langs = recipientsOf.get(asset) ?? [];
        const parsed = await checkTemplates(asset, work);
        checkAsset(asset, errors, warnings);
        const ok = FIELDS.every((f) => asset.content[f] === undefined || parsed.has(f));
        await checkVariables(db, asset, langs, request, contactColumns, warnings, parsed);
        if (ok && langs.length) samples.push(...(await renderSamples(db, asset, langs, request, work)));
      }
    }
    return {
      channel: 'email',
      audience: {
        intended: n('intended'),
        suppressed: n('suppressed'),
        deliverable,
        suppressionBreakdown: { unsubscribed: n('unsubscribed'), invalidEmail: n('invalid_email'), noConsent: n('no_consent') },
      },
      languages,
      render: {
        samples: samples.sort((a, b) => languages.findIndex((l) => l.language === a.language) - languages.findIndex((l) => l.language === b.language)),
        warnings,
        errors,
      },
    };
  } finally {
    sandbox?.close();
    await db.exec(`DROP TABLE IF EXISTS ${AUDIENCE}`);
  }
}

/** The audience, one row per contact after deduplication, with its suppression reason and language. */
async function selectAudience(scope: Scope, db: Database, request: NormalizedRequest): Promise<void> {
  const { audience } = request;
  const params: SqlParams = { emailPattern: EMAIL_PATTERN, noLanguage: NO_LANGUAGE };
  // Every list is one parameter joined as a table, so the time grows with the ids linearly.
  const inLists = (name: string, values: string[]) => `c.row_id IN (SELECT row_id FROM memberships WHERE list IN ${listParam(params, name, values)})`;
  const selected: string[] = [];
  if (audience.contactIds.length) selected.push(`c.contact_id IN ${listParam(params, 'ids', audience.contactIds)}`);
  if (audience.lists.length) selected.push(inLists('lists', audience.lists));
  const where = [`(${selected.join(' OR ')})`];
  if (audience.excludeLists.length) where.push(`NOT ${inLists('excluded', audience.excludeLists)}`);
  if (audience.languages) {
    where.push(`coalesce(nullif(lower(trim(c.language)), ''), $noLanguage) IN ${listParam(params, 'langs', audience.languages.map((l) => l.toLowerCase()))}`);
  }
  if (audience.countries) where.push(`upper(trim(c.country)) IN ${listParam(params, 'countries', audience.countries.map((c) => c.toUpperCase()))}`);
  await db.exec(
    `CREATE OR REPLACE TEMP TABLE ${AUDIENCE} AS
     WITH c AS (
       SELECT * EXCLUDE (k) FROM (
         SELECT *, row_number() OVER (PARTITION BY contact_id ORDER BY row_id) AS k FROM ${scope.table('contacts')})
       WHERE k = 1),
     memberships AS (SELECT row_id, unnest(string_split(coalesce(lists, ''), ';')) AS list FROM c),
     selected AS (SELECT c.* FROM c WHERE ${where.join(' AND ')}),
     ranked AS (
       SELECT *,
         CASE WHEN email IS NULL OR trim(email) = '' THEN 1
              ELSE row_number() OVER (PARTITION BY lower(trim(email)) ORDER BY contact_id) END AS email_rank,
         CASE WHEN email IS NULL OR trim(email) = '' THEN 0
              ELSE count(*) OVER (PARTITION BY lower(trim(email))) - 1 END AS duplicates
       FROM selected)
     SELECT * EXCLUDE (email_rank, duplicates, row_id, plugin_id),
       CASE WHEN email_rank = 1 THEN duplicates ELSE 0 END AS duplicates,
       CASE WHEN coalesce(unsubscribed, false) THEN 'unsubscribed'
            WHEN email IS NULL OR NOT regexp_full_match(trim(email), $emailPattern) THEN 'invalidEmail'
            WHEN NOT coalesce(consent, false) THEN 'noConsent' END AS suppression,
       coalesce(nullif(lower(trim(language)), ''), $noLanguage) AS lang
     FROM ranked WHERE email_rank = 1`,
    params,
  );
}

async function resolveAssets(scope: Scope, db: Database, inputs: AssetInput[], errors: Finding[]): Promise<ResolvedAsset[]> {
  const ids = inputs.filter((a): a is { assetId: string } => 'assetId' in a).map((a) => a.assetId);
  const stored = new Map<string, Row>();
  if (ids.length && scope.dataset.has('assets')) {
    const params: SqlParams = {};
    const rows = await db.all<Row>(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY asset_id ORDER BY row_id) AS k FROM ${scope.table('assets')})
       WHERE k = 1 AND asset_id IN ${listParam(params, 'assets', ids)}`,
      params,
    );
    for (const row of rows) stored.set(String(row.asset_id), row);
  }
  const resolved: ResolvedAsset[] = [];
  inputs.forEach((input, index) => {
    const language = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim().toLowerCase() : null);
    const content = (source: Record<string, unknown>) =>
      Object.fromEntries(FIELDS.filter((f) => typeof source[f] === 'string').map((f) => [f, source[f] as string]));
    if ('assetId' in input) {
      const row = stored.get(input.assetId);
      if (!row) {
        errors.push({
          code: 'asset_not_found',
          message: scope.dataset.has('assets')
            ? `no asset ${input.assetId} in the dataset's assets`
            : `asset ${input.assetId} is referred to by id, but the dataset has no assets table`,
          assetRef: input.assetId,
        });
        return;
      }
      resolved.push({ ref: input.assetId, language: language(row.language), content: content(row) });
    } else {
      const inline = input as InlineAsset;
      resolved.push({ ref: `inline:${index}`, language: language(inline.language), content: content(inline as Record<string, unknown>) });
    }
  });
  return resolved;
}

const where = (asset: ResolvedAsset) => ({ assetRef: asset.ref, ...(asset.language ? { language: asset.language } : {}) });

/** The sandbox of one validation, and the limit findings said so far (each once). */
class TemplateWork {
  private readonly said = new Set<string>();

  constructor(
    readonly sandbox: TemplateSandbox,
    readonly errors: Finding[],
  ) {}

  /** A render_limit_exceeded error naming the part and the limit; the validation's own limits are said once. */
  limitExceeded({ limit, busy }: LimitOutcome, asset: ResolvedAsset, field: Field, contactId?: string): void {
    const key = limit === 'requestTimeMs' || limit === 'validationOutputBytes' ? limit : `${limit} ${asset.ref} ${field}`;
    if (this.said.has(key)) return;
    this.said.add(key);
    const { limits } = this.sandbox;
    const bound = `${limitValue(limits, limit)}, ${limitFlag(limit)}`;
    const part = `${field} of ${asset.ref}`;
    const who = contactId === undefined ? '' : ` for contact ${contactId}`;
    const message = {
      renderTimeMs: `${part} takes longer than the render time limit (${bound})${who}; the asset is not rendered further`,
      requestTimeMs: busy
        ? `template checks and renders stopped at ${part}: the template renderer was busy with other validations until this one used up its time limit (${bound}); what comes after was not checked or rendered, try again later`
        : `template checks and renders stopped at ${part}: the validation used up its time limit (${bound}); what comes after was not checked or rendered`,
      templateChars: `${part} is longer than the template size limit (${bound}); the asset is not rendered`,
      renderMemory: `${part} allocates more than the render memory limit (${bound})${who}; the asset is not rendered further`,
      outputBytes: `${part} renders to more than the output size limit (${bound})${who}; the asset is not rendered further`,
      validationOutputBytes: `samples stopped at ${part}${who}: the parts rendered in this validation together are larger than the validation output limit (${bound}); no more samples are rendered`,
      heapMb: `${part} needs more memory than the renderer's heap limit (${bound})${who}; the asset is not rendered further`,
    }[limit];
    this.errors.push({
      code: 'render_limit_exceeded',
      message,
      ...where(asset),
      field,
      ...(contactId === undefined ? {} : { contactId }),
    });
  }
}

/** Parses each part in the sandbox; the parts that parse. Syntax, file access and limits are errors. */
async function checkTemplates(asset: ResolvedAsset, work: TemplateWork): Promise<Set<Field>> {
  const parsed = new Set<Field>();
  for (const field of FIELDS) {
    const template = asset.content[field];
    if (template === undefined) continue;
    const outcome = await work.sandbox.check(template);
    const line = 'line' in outcome && outcome.line ? { line: outcome.line } : {};
    const at = `${field}${line.line ? ` line ${line.line}` : ''}`;
    if (outcome.kind === 'ok') parsed.add(field);
    else if (outcome.kind === 'limit') work.limitExceeded(outcome, asset, field);
    else if (outcome.kind === 'fileAccess') {
      work.errors.push({
        code: 'template_file_access',
        message: `${at}: {% ${outcome.tag} %} would read a template file; templates here have no files, so write the content inline`,
        ...where(asset),
        field,
        ...line,
      });
    } else {
      work.errors.push({ code: 'template_syntax', message: `${at}: ${templateMessage(outcome.message)}`, ...where(asset), field, ...line });
    }
  }
  return parsed;
}

/** Subject, text part and HTML checks. */
function checkAsset(asset: ResolvedAsset, errors: Finding[], warnings: Finding[]): void {
  const at = where(asset);
  if (!asset.content.subject?.trim()) errors.push({ code: 'missing_subject', message: `${asset.ref} has no subject`, ...at, field: 'subject' });
  if (!asset.content.text?.trim()) {
    warnings.push({ code: 'missing_text_part', message: `${asset.ref} has no plain-text part; some clients and spam filters want one`, ...at, field: 'text' });
  }
  const html = asset.content.html ?? '';
  const report = checkHtml(html);
  const short = (item: string) => (item.length > 120 ? `${item.slice(0, 120)}…` : item);
  const list = (items: string[]) => `${items.slice(0, 3).map(short).join(', ')}${items.length > 3 ? ', …' : ''}`;
  if (!report.hasUnsubscribe) {
    warnings.push({ code: 'missing_unsubscribe_link', message: `${asset.ref} has no unsubscribe link`, ...at, field: 'html' });
  }
  if (report.imagesWithoutAlt.length) {
    warnings.push({
      code: 'image_missing_alt',
      message: `${plural(report.imagesWithoutAlt.length, 'image')} without alt text: ${list(report.imagesWithoutAlt)}`,
      ...at,
      field: 'html',
      count: report.imagesWithoutAlt.length,
    });
  }
  if (report.insecureLinks.length) {
    warnings.push({
      code: 'insecure_link',
      message: `${plural(report.insecureLinks.length, 'link')} over plain http: ${list(report.insecureLinks)}`,
      ...at,
      field: 'html',
      count: report.insecureLinks.length,
    });
  }
  if (report.emptyLinks) {
    warnings.push({ code: 'empty_link', message: `${plural(report.emptyLinks, 'link')} with an empty or "#" href`, ...at, field: 'html', count: report.emptyLinks });
  }
  if (report.placeholderLinks.length) {
    warnings.push({
      code: 'placeholder_link',
      message: `${plural(report.placeholderLinks.length, 'link')} to a placeholder or an unusable scheme: ${list(report.placeholderLinks)}`,
      ...at,
      field: 'html',
      count: report.placeholderLinks.length,
    });
  }
  if (report.relativeLinks.length) {
    warnings.push({
      code: 'relative_link',
      message: `${plural(report.relativeLinks.length, 'link')} without a scheme, which go nowhere from an inbox: ${list(report.relativeLinks)}`,
      ...at,
      field: 'html',
      count: report.relativeLinks.length,
    });
  }
  if (report.tooLarge) {
    warnings.push({
      code: 'html_too_large',
      message: `the HTML is ${Math.ceil(report.bytes / 1024)} KB; Gmail clips messages over 102 KB`,
      ...at,
      field: 'html',
      count: report.bytes,
    });
  }
}

async function audienceColumns(db: Database): Promise<Set<string>> {
  const rows = await db.all<{ column_name: string }>(`DESCRIBE ${AUDIENCE}`);
  return new Set(rows.map((r) => r.column_name));
}

function lookup(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** For each printed variable, how many deliverable recipients of the asset would see it empty. */
async function checkVariables(
  db: Database,
  asset: ResolvedAsset,
  langs: string[],
  request: NormalizedRequest,
  columns: Set<string>,
  warnings: Finding[],
  parsed: Set<Field>,
): Promise<void> {
  if (!langs.length) return;
  const used = new Map<string, { path: string[]; fields: Field[] }>();
  for (const field of FIELDS) {
    const template = asset.content[field];
    if (!template || !parsed.has(field)) continue;
    for (const path of printedVariables(template)) {
      const key = path.join('.');
      if (!used.has(key) && used.size >= MAX_CHECKED_VARIABLES) break;
      used.set(key, { path, fields: [...(used.get(key)?.fields ?? []), field] });
    }
  }
  if (!used.size) return;
  const params: SqlParams = {};
  const langList = listParam(params, 'langs', langs);
  const filters: string[] = [];
  const keys: string[] = [];
  for (const [key, { path }] of used) {
    if (path[0] === 'contact') {
      const column = path.length === 2 ? snake(path[1]!) : undefined;
      // A contact field the dataset does not have is empty for everyone.
      const condition =
        column && columns.has(column) && !['suppression', 'lang', 'duplicates'].includes(column)
          ? `${ident(column)} IS NULL OR trim(CAST(${ident(column)} AS VARCHAR)) = ''`
          : 'true';
      filters.push(`count(*) FILTER (WHERE ${condition}) AS ${ident(key)}`);
    } else {
      const value = lookup(request.variables, path);
      filters.push(`${value === undefined || value === null || value === '' ? 'count(*)' : '0'} AS ${ident(key)}`);
    }
    keys.push(key);
  }
  const row = (await db.one<Row>(
    `SELECT ${filters.join(', ')} FROM ${AUDIENCE} WHERE suppression IS NULL AND lang IN ${langList}`,
    params,
  ))!;
  for (const key of keys) {
    const count = Number(row[key] ?? 0);
    if (count === 0) continue;
    const { path, fields } = used.get(key)!;
    const source = path[0] === 'contact' ? 'contact field' : 'variable';
    warnings.push({
      code: 'unresolved_variable',
      message: `{{ ${key} }} in ${fields.join(', ')} is empty for ${plural(count, 'deliverable recipient')} (${source} without a value; add one, or a default filter)`,
      assetRef: asset.ref,
      field: fields[0]!,
      count,
    });
  }
}

/** The first recipients of each language in a fixed order (by a hash of the id), rendered. */
async function renderSamples(
  db: Database,
  asset: ResolvedAsset,
  langs: string[],
  request: NormalizedRequest,
  work: TemplateWork,
): Promise<ValidateResponse['render']['samples']> {
  const params: SqlParams = { size: request.sampleSize };
  const rows = await db.all<Row>(
    `SELECT * FROM (
       SELECT *, row_number() OVER (PARTITION BY lang ORDER BY hash(contact_id), contact_id) AS sample_rank
       FROM ${AUDIENCE} WHERE suppression IS NULL AND lang IN ${listParam(params, 'langs', langs)})
     WHERE sample_rank <= $size ORDER BY lang, sample_rank`,
    params,
  );
  const samples: ValidateResponse['render']['samples'] = [];
  for (const row of rows) {
    const contact: Record<string, unknown> = {};
    for (const [column, value] of Object.entries(row)) {
      if (!['suppression', 'lang', 'duplicates', 'sample_rank'].includes(column)) contact[camel(column)] = value;
    }
    const contactId = String(row.contact_id);
    const scope = { ...request.variables, contact };
    const rendered: Partial<Record<Field, string>> = {};
    for (const field of ['subject', 'html'] as const) {
      const template = asset.content[field] ?? '';
      const outcome = template === '' ? ({ kind: 'ok', output: '' } as const) : await work.sandbox.render(template, scope);
      if (outcome.kind === 'limit') {
        // The same template would hit the limit again: one finding, and the asset's other samples are left out.
        work.limitExceeded(outcome, asset, field, contactId);
        return samples;
      }
      if (outcome.kind === 'error') {
        work.errors.push({
          code: 'render_failed',
          message: `${asset.ref} failed to render for contact ${contactId}: ${field}${outcome.line ? ` line ${outcome.line}` : ''}: ${templateMessage(outcome.message)}`,
          assetRef: asset.ref,
          field,
          contactId,
          ...(outcome.line ? { line: outcome.line } : {}),
        });
        break;
      }
      rendered[field] = outcome.output;
    }
    if (rendered.subject === undefined || rendered.html === undefined) continue;
    samples.push({
      language: String(row.lang),
      contactId,
      subject: cut(rendered.subject, SAMPLE_SUBJECT_CHARS),
      htmlExcerpt: excerpt(rendered.html, HTML_EXCERPT_CHARS),
    });
  }
  return samples;
}
