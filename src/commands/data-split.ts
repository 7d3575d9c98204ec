/** `convx data import DIR --split-plugins --into OUTDIR/`: one imported file per plugin (local/import-writer.ts importSplit). */
import { basename, join } from 'node:path';
import { threadsOption } from '../config.js';
import type { Context } from '../context.js';
import { plural } from '../words.js';
import type { CommandFlags } from './options.js';

export async function importSplitPlugins(ctx: Context, dir: string, flags: CommandFlags<'data import'> & { into: string }): Promise<void> {
  const [{ importSplit }, { startProgress }] = await Promise.all([import('../local/import-writer.js'), import('./shared.js')]);
  const options = {
    ...(ctx.globals.referenceCurrency !== undefined ? { referenceCurrency: ctx.globals.referenceCurrency } : {}),
    force: flags.force ?? false,
    ...threadsOption(ctx),
  };
  const started = Date.now();
  // The phases on a terminal's stderr, as data import shows them.
  const progress = startProgress(ctx);
  const result = await importSplit(ctx.resolvePath(dir), ctx.resolvePath(flags.into), { ...options, onPhase: (phase) => progress.phase(phase) }).finally(() =>
    progress.done(),
  );
  for (const warning of result.findings) ctx.log.warn(`${warning.message}: ${warning.examples.join('; ')}`);
  for (const file of result.files) {
    const rows = file.tables.map((t) => `${t.table} ${t.rows.toLocaleString('en-US')}`).join(', ');
    ctx.log.info(`wrote ${join(flags.into, basename(file.file))} (${(file.bytes / 2 ** 20).toFixed(1)} MB): ${rows}`);
  }
  const currencies = [...new Set(result.files.flatMap((f) => f.scopes).filter((s) => s.referenceCurrency).map((s) => s.referenceCurrency))];
  ctx.log.info(
    `wrote ${plural(result.files.length, 'file')} into ${flags.into} in ${((Date.now() - started) / 1000).toFixed(1)} s, one per plugin` +
      (currencies.length ? `; attributed in ${currencies.join(', ')}` : ''),
  );
}
