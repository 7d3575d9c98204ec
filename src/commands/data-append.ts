/** `convx data import DIR --into FILE.duckdb --append`: the dataset's new files added to FILE (local/import-append.ts). */
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { plural } from '../words.js';
import type { CommandFlags } from './options.js';
import { importOptions, megabytes, secondsSince, tableRows, warnFindings, withPhases } from './data-common.js';

export async function appendImport(ctx: Context, dir: string, flags: CommandFlags<'data import'> & { into: string }): Promise<void> {
  if (flags.splitPlugins) throw new UsageError('--append adds to one .duckdb file; it does not take --split-plugins');
  if (flags.force) throw new UsageError('--append updates --into in place; drop --force (or drop --append to replace the file with a full import)');
  const started = Date.now();
  const [from, into] = [ctx.resolvePath(dir), ctx.resolvePath(flags.into)];
  // The file's copy starts before DuckDB and the import's modules load (local/append/early.ts).
  const early = (await import('../local/append/early.js')).copyEarly(from, into);
  const { appendDataset } = await import('../local/import-append.js');
  const result = await withPhases(ctx, (onPhase) => appendDataset(from, into, { ...importOptions(ctx), name: dir, intoName: flags.into, onPhase }, early));
  // Imported files given another time with the same bytes (copied or exported again) are the files imported.
  const touched = result.touched.length ? `; ${plural(result.touched.length, 'imported file')} with a new modification time and the same bytes taken as imported` : '';
  if (result.added.length === 0) {
    ctx.log.info(`${flags.into}: ${dir} has no new files; nothing to append${touched}`);
    return;
  }
  warnFindings(ctx, result.findings);
  const longWay = result.way === 'full' ? `; every file read and attributed again (${result.why ?? 'the new files could not be added alone'})` : '';
  ctx.log.info(`appended ${plural(result.added.length, 'file')} to ${flags.into} (${megabytes(result.bytes)}) in ${secondsSince(started)}: ${tableRows(result.tables)}${longWay}${touched}`);
}
