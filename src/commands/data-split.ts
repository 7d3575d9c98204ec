/** `convx data import DIR --split-plugins --into OUTDIR/`: one imported file per plugin (local/import-writer.ts importSplit). */
import { basename, join } from 'node:path';
import type { Context } from '../context.js';
import { plural } from '../words.js';
import type { CommandFlags } from './options.js';
import { importOptions, megabytes, secondsSince, tableRows, warnFindings, withPhases } from './data-common.js';

export async function importSplitPlugins(ctx: Context, dir: string, flags: CommandFlags<'data import'> & { into: string }): Promise<void> {
  const { importSplit } = await import('../local/import-writer.js');
  const started = Date.now();
  const result = await withPhases(ctx, (onPhase) =>
    importSplit(ctx.resolvePath(dir), ctx.resolvePath(flags.into), { ...importOptions(ctx), name: dir, intoName: flags.into, force: flags.force ?? false, ...(flags.sharedTables ? { sharedTables: true } : {}), onPhase }),
  );
  warnFindings(ctx, result.findings);
  for (const file of result.files) ctx.log.info(`wrote ${join(flags.into, basename(file.file))} (${megabytes(file.bytes)}): ${tableRows(file.tables)}`);
  const currencies = [...new Set(result.files.flatMap((f) => f.scopes).filter((s) => s.referenceCurrency).map((s) => s.referenceCurrency))];
  ctx.log.info(
    `wrote ${plural(result.files.length, 'file')} into ${flags.into} in ${secondsSince(started)}, one per plugin` + (currencies.length ? `; attributed in ${currencies.join(', ')}` : ''),
  );
  if (result.others.length) {
    const them = result.others.length === 1 ? 'it' : 'them';
    ctx.log.warn(
      `${flags.into} also holds ${result.others.join(', ')}, which this import did not write (no such plugin in ${dir}): convx serve --data ${flags.into} answers for ${them} too; remove ${them} if the plugin is gone`,
    );
  }
}
