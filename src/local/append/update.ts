/**
 * The short way of `data import --append`: only the new files are read, checked and typed
 * (new-rows.ts), their rows added after the stored ones of a copy of the file, and each scope's
 * attribution brought up to date where the new rows can change it (reattribute.ts), with the
 * result of a full import of all the files. Where the update needs the long way, why, having
 * written nothing (NeedsFullImport: a new table, table columns read otherwise, a new plugin, another
 * reference currency).
 */
import { statSync } from 'node:fs';
import { packageVersion } from '../../version.js';
import { Scope } from '../attribution.js';
import type { Database } from '../db.js';
import type { DataIssue, Dataset } from '../dataset.js';
import { IMPORT_FORMAT, IMPORT_VERSION, type ImportedFile, type ImportMeta } from '../imported.js';
import { unchangedSinceListed } from '../import-files.js';
import { attachOut, writeMeta, type ImportOptions, type ImportSummary } from '../import-writer.js';
import { Staging } from '../staging.js';
import type { TableName } from '../schema.js';
import { ident, join, sql, table } from '../sql.js';
import type { EarlyCopy } from './early.js';
import { addNewRows, mergeFindings, NeedsFullImport, newOrdersLast, newRows, readNewFiles, wholeDataset } from './new-rows.js';
import { reattribute } from './reattribute.js';

/** Refuses (NeedsFullImport) new rows of a plugin the file holds no scope of (read from the new rows' typed tables, before the copy). */
async function knownPlugins(fresh: Dataset, meta: ImportMeta): Promise<void> {
  const known = new Set(meta.scopes.map((s) => s.plugin));
  const names = [...fresh.tables].filter(([, loaded]) => loaded.hasPluginId).map(([name]) => name);
  if (names.length === 0) return;
  // One query for every table with plugin_id.
  const selects = names.map((name) => sql`SELECT DISTINCT plugin_id AS p FROM ${table(name)} WHERE plugin_id IS NOT NULL`);
  const rows = await fresh.db.all<{ p: string }>(join(selects, sql` UNION `));
  if (rows.some((r) => !known.has(r.p))) throw new NeedsFullImport('a new plugin');
}

/** The tables the attribution reads (reattribute.ts); a new row of plugins may change a scope's reference currency besides. */
const ATTRIBUTION_INPUTS: readonly TableName[] = ['orders', 'touches', 'fx', 'contacts', 'sources'];

/**
 * The tables with new rows of a scope's plugin (or, for a table without plugin_id and for a dataset
 * without plugins, any new rows), from one query over the new rows (n_<name>) of every scope.
 */
async function newRowsByPlugin(fresh: Dataset): Promise<(plugin: string | null) => Set<TableName>> {
  const names = (['plugins', ...ATTRIBUTION_INPUTS] as TableName[]).filter((name) => fresh.has(name));
  const own = (name: TableName) => fresh.tables.get(name)!.hasPluginId;
  const parts = names.map((name) =>
    own(name) ? sql`(SELECT DISTINCT ${name} AS t, plugin_id AS p FROM ${newRows(name)})` : sql`(SELECT ${name} AS t, NULL AS p FROM ${newRows(name)} LIMIT 1)`,
  );
  const rows = parts.length ? await fresh.db.all<{ t: TableName; p: string | null }>(join(parts, sql` UNION ALL `)) : [];
  return (plugin) => new Set(rows.filter((r) => plugin === null || !own(r.t) || r.p === plugin).map((r) => r.t));
}

/**
 * Each stored scope's attribution brought up to date (the reference currency resolved as before, or
 * the long way). A scope without new rows of its own or of a table every scope reads keeps its
 * attribution and its reference currency, which only its rows tell: it is not opened at all.
 */
async function updateScopes(whole: Dataset, fresh: Dataset, meta: ImportMeta, referenceCurrency: string | undefined): Promise<void> {
  const storedRows = new Map<TableName, number>(meta.tables.map((t) => [t.table, t.rows]));
  const newRowsOf = await newRowsByPlugin(fresh);
  for (const [i, stored] of meta.scopes.entries()) {
    const tables = newRowsOf(stored.plugin);
    if (tables.size === 0) continue;
    const scope = await Scope.forQuery(whole, `scope_${i}`, stored.plugin, {
      ...(referenceCurrency !== undefined ? { referenceCurrency } : {}),
      attributed: (plugin, reference) => (plugin === stored.plugin && reference === stored.referenceCurrency ? sql`out.${ident(stored.schema)}` : undefined),
    });
    if (!scope.reports) continue;
    if (!scope.summarised) throw new NeedsFullImport('another reference currency');
    if (ATTRIBUTION_INPUTS.some((name) => tables.has(name))) await reattribute({ scope, work: `update_${i}`, fresh, storedRows });
  }
}

/** The update into the staging copy attached as out: the new rows, each scope's attribution, what the file holds. */
async function updateCopy(db: Database, dir: string, fresh: Dataset, meta: ImportMeta, files: ImportedFile[], findings: DataIssue[], options: ImportOptions) {
  const phase = options.onPhase ?? (() => undefined);
  const tables = await addNewRows(db, fresh, meta);
  phase('attributing');
  await updateScopes(wholeDataset(dir, db, meta, findings), fresh, meta, options.referenceCurrency);
  phase('writing');
  // The new files are read: one written meanwhile keeps no hash (unchangedSinceListed).
  const next: ImportMeta = { ...meta, format: IMPORT_FORMAT, version: IMPORT_VERSION, convx: packageVersion(), source: dir, importedAt: new Date().toISOString(), tables, findings, files: unchangedSinceListed(dir, files) };
  await writeMeta(db, next, true);
  return { tables, scopes: meta.scopes, findings };
}

/**
 * `data import --append` of the files added, the short way (see the module's comment); for the long way, why (NeedsFullImport), having written nothing.
 * identity: the file whose list of files was read (fileIdentity), which the result replaces (Staging.copy). It takes over early's copy (removed or committed).
 */
export async function appendInPlace(
  dir: string,
  into: string,
  meta: ImportMeta,
  files: ImportedFile[],
  added: readonly ImportedFile[],
  options: ImportOptions,
  identity: string,
  early?: EarlyCopy,
): Promise<ImportSummary | NeedsFullImport> {
  (options.onPhase ?? (() => undefined))('reading and checking the files');
  // The file is copied while the new files are read and checked (the copy of the bench's 350 MB takes
  // 0.1 to 0.35 s, the reading about 60 ms of it), or was since the command started (early.ts); when
  // the update needs the long way, the copy is removed.
  const staging = early?.staging ?? new Staging();
  const copy = early?.copy ?? staging.copy(into, identity);
  let fresh: Dataset;
  try {
    fresh = await readNewFiles(dir, added, meta, options);
  } catch (error) {
    await staging.remove();
    if (error instanceof NeedsFullImport) return error;
    throw error;
  }
  const db = fresh.db;
  try {
    const findings = mergeFindings(meta.findings, fresh.findings, newOrdersLast(meta.files ?? [], added));
    await knownPlugins(fresh, meta);
    await attachOut(db, copy);
    const written = await updateCopy(db, dir, fresh, meta, files, findings, options);
    await db.exec(sql`DETACH out`);
    staging.commit();
    return { file: into, bytes: statSync(into).size, ...written };
  } catch (error) {
    await db.exec(sql`DETACH DATABASE IF EXISTS out`).catch(() => undefined);
    await staging.remove();
    if (error instanceof NeedsFullImport) return error;
    throw error;
  } finally {
    db.close();
  }
}
