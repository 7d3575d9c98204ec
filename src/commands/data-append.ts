/** `convx data import DIR --into FILE.duckdb --append`: the dataset's new files added to FILE (local/import-append.ts). */
import { threadsOption } from '../config.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { plural } from '../words.js';
import type { CommandFlags } from './options.js';

export async function appendImport(ctx: Context, dir: string, flags: CommandFlags<'data import'> & { into: string }): Promise<void> {
  if (flags.splitPlugins) throw new UsageError('--append adds to one .duckdb file; it does not take --split-plugins');
  if (flags.force) throw new UsageError('--append updates --into in place; drop --force (or drop --append to replace the file with a full import)');
  const [{ appendDataset }, { startProgress }] = await Promise.all([import('../local/import-append.js'), import('./shared.js')]);
  const started = Date.now();
  const progress = startProgress(ctx);
  const result = await appendDataset(ctx.resolvePath(dir), ctx.resolvePath(flags.into), {
    ...(ctx.globals.referenceCurrency !== undefined ? { referenceCurrency: ctx.globals.referenceCurrency } : {}),
    onPhase: (phase) => progress.phase(phase),
    ...threadsOption(ctx),
  }).finally(() => progress.done());
  if (result.added.length === 0) {
    ctx.log.info(`${flags.into}: ${dir} has no new files; nothing to append`);
    return;
  }
  for (const warning of result.findings) ctx.log.warn(`${warning.message}: ${warning.examples.join('; ')}`);
  const rows = result.tables.map((t) => `${t.table} ${t.rows.toLocaleString('en-US')}`).join(', ');
  ctx.log.info(
    `appended ${plural(result.added.length, 'file')} to ${flags.into} (${(result.bytes / 2 ** 20).toFixed(1)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s: ${rows}`,
  );
}
