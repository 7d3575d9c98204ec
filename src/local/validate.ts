/**
 * The SQL side of the dry run of an e-mail delivery (docs/validation.md,
 * "convx validate"): it gathers over every contact what the rules need (the audience,
 * its deduplication and suppression, its languages, the stored assets, how
 * many recipients would see each printed variable empty, the sample
 * recipients) and calls the rules, which need no database: the pure ones in
 * src/validation/delivery.ts, the template work in src/validation/render.ts.
 */
import {
  invalidResponse,
  normalizeRequest,
  NO_LANGUAGE,
  type AssetInput,
  type Finding,
  type NormalizedRequest,
  type ValidateResponse,
} from '../model/validation.js';
import * as rules from '../validation/delivery.js';
import { moreAssetFindings } from '../validation/asset-checks.js';
import { selectClients } from '../validation/clients.js';
import { headerFindings } from '../validation/headers.js';
import { textNeedsRendering, trackingFindings, type RenderedSample } from '../validation/tracking.js';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from '../validation/limits.js';
import { checkTemplates, renderSamples, TemplateWork, type SampleRecipient } from '../validation/render.js';
import { TemplateSandbox } from '../validation/sandbox.js';
import { camelKey, contactColumn, suggestionBudget, unknownReferences, variableFindings } from '../validation/variables.js';
import { unknownAudienceFindings, type AudienceValueKey, type UnknownAudience } from '../validation/audience.js';
import { currentBudget, type Database, type Row } from './db.js';
import type { Scope } from './attribution.js';
import { ident, join, sql, trusted, type Sql } from './sql.js';

/**
 * An address as the HTML standard's e-mail input accepts it, with a dot in the
 * domain: what a mail server will take, checked in SQL over every contact.
 */
export const EMAIL_PATTERN =
  "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

const AUDIENCE = ident('convx_validation_audience');
/** The audience table's own columns (its suppression, language, duplicates, sample rank): named apart from any column of the contacts file, which may have any other name. */
const ours = (column: string) => column.startsWith('__convx_');

/**
 * A list of strings as one parameter: a JSON array that DuckDB reads into a
 * list, as a subquery for IN. One value however long the list (a parameter per
 * value makes the statement grow with it, and its preparation worse than linear).
 */
function listParam(values: readonly string[]): Sql {
  return sql`(SELECT unnest(from_json(CAST(${JSON.stringify(values)} AS JSON), '["VARCHAR"]')))`;
}

/**
 * The response to a validation request over the plugin's contacts and assets.
 * The audience is a temp table for the time of the request, dropped at the end.
 */
export async function validateDelivery(
  scope: Scope,
  db: Database,
  body: unknown,
  limits: RenderLimits = DEFAULT_RENDER_LIMITS,
  plugin: string | undefined = scope.plugin ?? undefined,
): Promise<ValidateResponse> {
  const { request, problems } = normalizeRequest(body);
  if (!request) return invalidResponse(problems);
  rules.checkRequestSize(request);
  const clients = request.resolveOnly && !request.clients ? undefined : selectClients(request.clients);
  if (clients?.unknown) return invalidResponse([{ code: 'invalid_request', message: `options.clients: ${clients.unknown}`, field: 'options.clients' }]);
  if (!scope.dataset.has('contacts')) {
    return invalidResponse([{ code: 'invalid_request', message: 'the dataset has no contacts table, so there is no audience to validate' }]);
  }
  // Opened now: the plugin is owed a renderer from now on; waiting for one is bounded by the request's budget.
  const budget = currentBudget();
  const sandbox = request.resolveOnly
    ? undefined
    : new TemplateSandbox(limits, { ...(budget ? { budget } : {}), ...(plugin === undefined ? {} : { key: plugin }) });
  try {
    // Gathered in SQL, judged by the rules; each list of findings in the order the response gives them.
    await selectAudience(scope, db, request);
    const counts = await countAudience(db);
    const audience = rules.audienceFindings(counts);
    const { assets, errors: unresolved } = rules.resolveAssets(request.assets, await storedAssets(scope, db, request.assets), scope.dataset.has('assets'));
    const coverage = rules.languageCoverage(await deliverableLanguages(db), assets);
    const unknown = unknownAudienceFindings(await unknownAudience(scope, db, request));
    const errors: Finding[] = [...unresolved, ...coverage.errors, ...audience.errors, ...unknown.errors];
    const warnings: Finding[] = [...audience.warnings, ...coverage.warnings, ...headerFindings(request.headers), ...unknown.warnings];
    const information: Finding[] = [];

    const samples: ValidateResponse['render']['samples'] = [];
    const renderedHtml: RenderedSample[] = [];
    if (sandbox) {
      const work = new TemplateWork(sandbox, errors);
      const contactColumns = await audienceColumns(db);
      // the did-you-means of the whole validation share one budget (variables.ts)
      const suggestions = suggestionBudget();
      for (const asset of assets) {
        const langs = coverage.languagesOf.get(asset) ?? [];
        const parsed = await checkTemplates(asset, work);
        const found = rules.assetFindings(asset);
        errors.push(...found.errors);
        warnings.push(...found.warnings);
        const more = moreAssetFindings(asset, clients?.clients ?? []);
        warnings.push(...more.warnings);
        information.push(...more.information);
        if (!langs.length) continue; // an asset nobody gets: no variables to count, no samples
        const printed = rules.printedVariablesOf(asset, parsed, request.variables);
        const recipientCount = coverage.languages.filter((l) => langs.includes(l.language)).reduce((n, l) => n + l.recipients, 0);
        const empty = await countEmpty(db, printed, langs, contactColumns);
        const known = { columns: contactColumns, variables: request.variables, suggestions };
        const judged = variableFindings(asset, printed, known, empty, recipientCount);
        errors.push(...judged.errors, ...unknownReferences(asset, rules.referencedVariablesOf(asset, parsed, request.variables, printed), known));
        warnings.push(...judged.warnings);
        if (rules.allParsed(asset, parsed)) {
          // tracking lint judges links filled in per recipient in the samples' whole HTML (and text part, when a URL of it has a template tag)
          const recipients = await sampleRecipients(db, langs, request.sampleSize);
          const rendered = await renderSamples(asset, recipients, request.variables, work, request.preview || !!request.tracking, !!request.tracking && textNeedsRendering(asset));
          rendered.forEach((s) => s.html !== undefined && renderedHtml.push({ assetRef: asset.ref, language: s.language, contactId: s.contactId, html: s.html, ...(s.text === undefined ? {} : { text: s.text }) }));
          samples.push(...rendered.map(({ html, text: _text, ...sample }) => (request.preview ? { ...sample, html: html! } : sample)));
        }
      }
      warnings.push(...trackingFindings(assets, renderedHtml, request));
    }
    return {
      channel: 'email',
      audience: rules.audienceSummary(counts),
      languages: coverage.languages,
      render: { samples: rules.orderSamples(samples, coverage.languages), warnings, errors, ...(information.length ? { information } : {}) },
    };
  } finally {
    sandbox?.close();
    // A failed drop (the request's budget ran out) must not hide the answer or the failure: the
    // table is replaced by the next validation on this connection, and goes with it anyway.
    await db.exec(sql`DROP TABLE IF EXISTS ${AUDIENCE}`).catch(() => undefined);
  }
}

/** The audience, one row per contact after deduplication, with its suppression reason and language. */
async function selectAudience(scope: Scope, db: Database, request: NormalizedRequest): Promise<void> {
  await db.exec(
    sql`CREATE OR REPLACE TEMP TABLE ${AUDIENCE} AS
     WITH c AS (
       SELECT * EXCLUDE (__convx_k) FROM (
         SELECT *, row_number() OVER (PARTITION BY contact_id ORDER BY row_id) AS __convx_k FROM ${scope.relation('contacts')})
       WHERE __convx_k = 1),
     -- a contact's lists: ';'-separated ids, each trimmed ('l-1; blocked' is on blocked)
     memberships AS (SELECT row_id, trim(list) AS list FROM (SELECT row_id, unnest(string_split(coalesce(lists, ''), ';')) AS list FROM c)),
     -- the address a contact is deduplicated by: its e-mail trimmed, in any case; none without one. The
     -- columns of ours are named __convx_*: a contact's own columns (merge fields) may have any other name
     selected AS (SELECT c.*, CASE WHEN trim(c.email) <> '' THEN lower(trim(c.email)) END AS __convx_address FROM c WHERE ${audienceFilter(request)}),
     -- per address, the contact that keeps it (the least contact_id: c holds a contact once) and how many
     -- others share it; a hash aggregate and an equi-join on the column cost less than a window
     addresses AS (
       SELECT __convx_address, min(contact_id) AS __convx_keeper, count(*) - 1 AS __convx_others
       FROM selected WHERE __convx_address IS NOT NULL GROUP BY 1),
     ranked AS (
       SELECT s.*, a.__convx_keeper IS NULL OR a.__convx_keeper = s.contact_id AS __convx_kept, coalesce(a.__convx_others, 0) AS __convx_duplicates
       FROM selected s LEFT JOIN addresses a ON a.__convx_address = s.__convx_address)
     SELECT * EXCLUDE (__convx_address, __convx_kept, row_id, plugin_id),
       CASE WHEN coalesce(unsubscribed, false) THEN 'unsubscribed'
            WHEN email IS NULL OR NOT regexp_full_match(trim(email), ${EMAIL_PATTERN}) THEN 'invalidEmail'
            WHEN NOT coalesce(consent, false) THEN 'noConsent' END AS __convx_suppression,
       coalesce(nullif(lower(trim(language)), ''), ${NO_LANGUAGE}) AS __convx_lang
     FROM ranked WHERE __convx_kept`,
  );
}

/** The contacts (c) the request's audience selects: its ids and lists, less the excluded lists, of its languages and countries. */
function audienceFilter({ audience }: NormalizedRequest): Sql {
  // Every list is one parameter joined as a table, so the time grows with the ids linearly.
  const inLists = (values: string[]) => sql`c.row_id IN (SELECT row_id FROM memberships WHERE list IN ${listParam(values)})`;
  const selected: Sql[] = [];
  if (audience.contactIds.length) selected.push(sql`c.contact_id IN ${listParam(audience.contactIds)}`);
  if (audience.lists.length) selected.push(inLists(audience.lists));
  const where = [sql`(${join(selected, trusted(' OR '))})`];
  if (audience.excludeLists.length) where.push(sql`NOT ${inLists(audience.excludeLists)}`);
  if (audience.languages) {
    const languages = audience.languages.map((l) => l.toLowerCase());
    where.push(sql`coalesce(nullif(lower(trim(c.language)), ''), ${NO_LANGUAGE}) IN ${listParam(languages)}`);
  }
  if (audience.countries) where.push(sql`upper(trim(c.country)) IN ${listParam(audience.countries.map((c) => c.toUpperCase()))}`);
  return join(where, trusted(' AND '));
}

/**
 * The audience's values no contact has (compared as the audience's filter compares
 * them: languages in lower case, countries in upper case), in the request's order,
 * and the known lists, languages and countries to suggest from.
 */
async function unknownAudience(scope: Scope, db: Database, { audience }: NormalizedRequest): Promise<UnknownAudience> {
  const contacts = scope.relation('contacts');
  const listIds = sql`SELECT trim(unnest(string_split(coalesce(lists, ''), ';'))) FROM ${contacts}`;
  const kinds: Record<AudienceValueKey, { values: string[]; known: Sql; norm: (v: string) => string }> = {
    lists: { values: audience.lists, known: listIds, norm: (v) => v },
    excludeLists: { values: audience.excludeLists, known: listIds, norm: (v) => v },
    contactIds: { values: audience.contactIds, known: sql`SELECT CAST(contact_id AS VARCHAR) FROM ${contacts}`, norm: (v) => v },
    languages: { values: audience.languages ?? [], known: sql`SELECT coalesce(nullif(lower(trim(language)), ''), ${NO_LANGUAGE}) FROM ${contacts}`, norm: (v) => v.toLowerCase() },
    countries: { values: audience.countries ?? [], known: sql`SELECT upper(trim(country)) FROM ${contacts}`, norm: (v) => v.toUpperCase() },
  };
  const found: UnknownAudience = { missing: {}, known: { lists: [], languages: [], countries: [] } };
  for (const [key, { values, known, norm }] of Object.entries(kinds) as [AudienceValueKey, (typeof kinds)[AudienceValueKey]][]) {
    if (!values.length) continue;
    const rows = await db.all<{ v: string }>(
      sql`SELECT DISTINCT v FROM ${listParam(values.map(norm))} AS t(v) WHERE v NOT IN (SELECT k FROM (${known}) AS s(k) WHERE k IS NOT NULL)`,
    );
    if (!rows.length) continue;
    const missing = new Set(rows.map((r) => r.v));
    found.missing[key] = [...new Set(values.filter((v) => missing.has(norm(v))))];
    if (key !== 'contactIds') {
      const suggest = key === 'excludeLists' ? 'lists' : key;
      const near = await db.all<{ k: string }>(sql`SELECT DISTINCT k FROM (${known}) AS s(k) WHERE k IS NOT NULL AND k <> '' ORDER BY k LIMIT 10000`);
      found.known[suggest] = near.map((r) => r.k);
    }
  }
  return found;
}

/** The audience's counts: intended, suppressed by reason, and the duplicates left out. */
async function countAudience(db: Database): Promise<rules.AudienceCounts> {
  const row = (await db.one<Row>(sql`
    SELECT count(*) AS intended,
      count(*) FILTER (WHERE __convx_suppression IS NOT NULL) AS suppressed,
      count(*) FILTER (WHERE __convx_suppression = 'unsubscribed') AS unsubscribed,
      count(*) FILTER (WHERE __convx_suppression = 'invalidEmail') AS invalid_email,
      count(*) FILTER (WHERE __convx_suppression = 'noConsent') AS no_consent,
      coalesce(sum(__convx_duplicates), 0) AS duplicates
    FROM ${AUDIENCE}`))!;
  const n = (key: string) => Number(row[key] ?? 0);
  return {
    intended: n('intended'),
    suppressed: n('suppressed'),
    unsubscribed: n('unsubscribed'),
    invalidEmail: n('invalid_email'),
    noConsent: n('no_consent'),
    duplicates: n('duplicates'),
  };
}

/** The deliverable recipients per language, most first. */
async function deliverableLanguages(db: Database): Promise<rules.LanguageCount[]> {
  const rows = await db.all<{ lang: string; n: bigint }>(
    sql`SELECT __convx_lang AS lang, count(*) AS n FROM ${AUDIENCE} WHERE __convx_suppression IS NULL GROUP BY 1 ORDER BY n DESC, lang`,
  );
  return rows.map((r) => ({ language: r.lang, recipients: Number(r.n) }));
}

/** The first row of each asset_id the request names, from the dataset's assets (none without that table). */
async function storedAssets(scope: Scope, db: Database, inputs: AssetInput[]): Promise<Map<string, Row>> {
  const ids = inputs.filter((a): a is { assetId: string } => 'assetId' in a).map((a) => a.assetId);
  const stored = new Map<string, Row>();
  if (ids.length && scope.dataset.has('assets')) {
    const rows = await db.all<Row>(
      sql`SELECT * EXCLUDE (__convx_k) FROM (SELECT *, row_number() OVER (PARTITION BY asset_id ORDER BY row_id) AS __convx_k FROM ${scope.relation('assets')})
       WHERE __convx_k = 1 AND asset_id IN ${listParam(ids)}`,
    );
    for (const row of rows) stored.set(String(row.asset_id), row);
  }
  return stored;
}

/** The contact's columns in the audience table (not ours). */
async function audienceColumns(db: Database): Promise<Set<string>> {
  const rows = await db.all<{ column_name: string }>(sql`DESCRIBE ${AUDIENCE}`);
  return new Set(rows.map((r) => r.column_name).filter((name) => !ours(name)));
}

/** For each printed variable, how many deliverable recipients of `langs` would see it empty. */
async function countEmpty(db: Database, printed: readonly rules.PrintedVariable[], langs: string[], columns: Set<string>): Promise<Map<string, number>> {
  if (!printed.length) return new Map();
  const filters = printed.map((variable) => {
    let count: Sql;
    if (variable.source === 'contact') {
      const column = contactColumn(variable, columns);
      // A contact field the dataset does not have is empty for everyone.
      const condition = column ? sql`${ident(column)} IS NULL OR trim(CAST(${ident(column)} AS VARCHAR)) = ''` : sql`true`;
      count = sql`count(*) FILTER (WHERE ${condition})`;
    } else count = variable.emptyInRequest ? sql`count(*)` : sql`0`;
    return sql`${count} AS ${ident(variable.key)}`;
  });
  const row = (await db.one<Row>(sql`SELECT ${join(filters)} FROM ${AUDIENCE} WHERE __convx_suppression IS NULL AND __convx_lang IN ${listParam(langs)}`))!;
  return new Map(printed.map(({ key }) => [key, Number(row[key] ?? 0)]));
}

/** The first recipients of each language in a fixed order (by a hash of the id), as the templates see them. */
async function sampleRecipients(db: Database, langs: string[], size: number): Promise<SampleRecipient[]> {
  const rows = await db.all<Row>(
    sql`SELECT * FROM (
       SELECT *, row_number() OVER (PARTITION BY __convx_lang ORDER BY hash(contact_id), contact_id) AS __convx_sample_rank
       FROM ${AUDIENCE} WHERE __convx_suppression IS NULL AND __convx_lang IN ${listParam(langs)})
     WHERE __convx_sample_rank <= ${size} ORDER BY __convx_lang, __convx_sample_rank`,
  );
  return rows.map((row) => {
    const contact: Record<string, unknown> = {};
    for (const [column, value] of Object.entries(row)) {
      // By its camelCase key and by the column's own name (contact.firstName, contact.first_name).
      if (!ours(column)) contact[camelKey(column)] = contact[column] = value;
    }
    return { language: String(row.__convx_lang), contactId: String(row.contact_id), contact };
  });
}
