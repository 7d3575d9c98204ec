import { isValidDate } from '../model/query.js';
import { threadsOption } from '../config.js';
import { importOptions, megabytes, secondsSince, tableRows, wholeNumber, warnFindings, withPhases } from './data-common.js';
import { ExitCode, UsageError } from '../errors.js';
import type { Context } from '../context.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { plural } from '../words.js';
import { safeData, safeLines } from '../output/terminal.js';

/** What `data check` reads: the folder named, else the dataset the other commands read (--data, CONVX_DATA, the profile's); with the name it is shown by. */
function checkedDataset(ctx: Context, named: string | undefined): { dir: string; shown: string } {
  if (named !== undefined) return { dir: ctx.resolvePath(named), shown: named };
  const data = ctx.settings.data;
  if (!data) throw new UsageError('convx data check needs a dataset: give its folder (convx data check DIR, or --data DIR) or set CONVX_DATA', [], 'the folder of the exported files, e.g. convx data check exports/');
  return { dir: ctx.dataDir(), shown: data };
}

export const dataCheck = defineHandler<Record<string, never>>({
  async run(ctx, args) {
    const [{ checkDataset }, { startProgress }] = await Promise.all([import('../local/check.js'), import('./shared.js')]);
    // A line on a terminal's stderr while a large dataset is checked (after a second; not with -o json, --quiet or CI).
    const dataset = checkedDataset(ctx, args[0]);
    const progress = startProgress(ctx);
    let report;
    try {
      report = await checkDataset(dataset.dir, (phase) => progress.phase(phase), { ...threadsOption(ctx), name: dataset.shown });
    } finally {
      progress.done();
    }
    if (ctx.format === 'json' || ctx.format === 'jsonl') {
      await ctx.output.json(report);
      return report.ok ? ExitCode.ok : ExitCode.findings;
    }
    const { chalk } = ctx;
    // File names, plugin ids and the examples of findings come from the data: made safe for a terminal (output/terminal.ts).
    const shown = safeData(report);
    const lines: string[] = [];
    for (const t of shown.tables) {
      // orders and touches: first and last datetime; fx: first and last date (UTC).
      const range = t.from && t.to ? `, ${t.from} to ${t.to}` : '';
      lines.push(`${chalk.dim('table')}  ${t.table.padEnd(8)} ${t.file} (${plural(t.rows, 'row')}${range})`);
    }
    if (shown.plugins.length) lines.push(`${chalk.dim('plugins')} ${shown.plugins.join(', ')}`);
    for (const p of report.problems) lines.push(`${chalk.red('error')}  ${safeLines(p.text)}`);
    for (const f of shown.findings) {
      lines.push(`${chalk.yellow('finding')} ${f.code}: ${f.message}${f.examples.length ? ` (e.g. ${f.examples.join(', ')})` : ''}`);
    }
    lines.push(
      report.ok
        ? chalk.green(`${dataset.shown}: no problems found`)
        : report.integrityChecked
          ? `${dataset.shown}: ${plural(shown.problems.length, 'problem')}, ${plural(shown.findings.length, 'finding')}`
          : // the checks across tables need files without problems: "0 findings" would read as "the rest is clean"
            `${dataset.shown}: ${plural(shown.problems.length, 'problem')}${shown.findings.length ? `, ${plural(shown.findings.length, 'finding')}` : ''}; ` +
            'the checks across tables (duplicate ids, refunds without an order, rates, ...) run once the files have no problem',
    );
    await ctx.output.text(`${lines.join('\n')}\n`);
    return report.ok ? ExitCode.ok : ExitCode.findings;
  },
});

export const dataImport = defineHandler<CommandFlags<'data import'>>({
  async run(ctx, args, flags) {
    if (!flags.into) throw new UsageError('--into <file> is required: the .duckdb file to write, e.g. --into shop.duckdb');
    if (flags.sharedTables && !flags.splitPlugins) throw new UsageError('--shared-tables goes with --split-plugins: one file of every plugin shares every table anyway');
    if (flags.append) return (await import('./data-append.js')).appendImport(ctx, args[0]!, { ...flags, into: flags.into });
    if (flags.splitPlugins) return (await import('./data-split.js')).importSplitPlugins(ctx, args[0]!, { ...flags, into: flags.into });
    const { importDataset } = await import('../local/import-writer.js');
    const started = Date.now();
    const result = await withPhases(ctx, (onPhase) =>
      importDataset(ctx.resolvePath(args[0]!), ctx.resolvePath(flags.into!), { ...importOptions(ctx), name: args[0]!, intoName: flags.into!, force: flags.force ?? false, onPhase }),
    );
    warnFindings(ctx, result.findings);
    const currencies = [...new Set(result.scopes.filter((s) => s.referenceCurrency).map((s) => s.referenceCurrency))];
    ctx.log.info(
      `wrote ${flags.into} (${megabytes(result.bytes)}) in ${secondsSince(started)}: ${tableRows(result.tables)}` +
        (currencies.length ? `; attributed in ${currencies.join(', ')}` : ''),
    );
  },
});

export const dataGenerate = defineHandler<CommandFlags<'data generate'>>({
  async run(ctx, _args, f) {
    if (!f.out) throw new UsageError('--out <dir> is required');
    for (const [name, value] of [['from', f.from], ['to', f.to]] as const) {
      if (!isValidDate(value)) throw new UsageError(`--${name}: "${value}" is not a date of the form YYYY-MM-DD`);
    }
    if (f.from > f.to) throw new UsageError(`--from ${f.from} is after --to ${f.to}`);
    if (f.fileFormat !== 'csv' && f.fileFormat !== 'parquet') {
      throw new UsageError(`--file-format: "${f.fileFormat}" is not csv or parquet`);
    }
    const { generateDataset, MAX_CURRENCIES } = await import('../local/generate.js');
    const result = await generateDataset({
      out: ctx.resolvePath(f.out),
      seed: wholeNumber('seed', f.seed, 0, 2 ** 31),
      contacts: wholeNumber('contacts', f.contacts, 1, 100_000_000),
      orders: wholeNumber('orders', f.orders, 0, 1_000_000_000),
      touches: wholeNumber('touches', f.touches, 0, 1_000_000_000),
      from: f.from,
      to: f.to,
      format: f.fileFormat,
      plugins: wholeNumber('plugins', f.plugins, 1, 1000),
      sources: wholeNumber('sources', f.sources, 1, 100_000),
      currencies: wholeNumber('currencies', f.currencies, 2, MAX_CURRENCIES),
      force: f.force ?? false,
      ...threadsOption(ctx),
    });
    for (const file of result.files) ctx.log.info(`wrote ${file.file} (${plural(file.rows, 'row')})`);
  },
});
