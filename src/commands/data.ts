import { isValidDate } from '../model/query.js';
import { UsageError } from '../errors.js';
import { defineCommand } from './registry.js';

export const dataCheck = defineCommand<Record<string, never>>({
  name: 'data check',
  summary: 'report every problem and integrity finding of a dataset, without computing a report',
  args: '<dir>',
  examples: ['convx data check samples/shop', 'convx data check exports/2024-06 -o json'],
  async run(ctx, args) {
    const { checkDataset } = await import('../local/check.js');
    const report = await checkDataset(ctx.resolvePath(args[0]!));
    if (ctx.format === 'json' || ctx.format === 'jsonl') {
      await ctx.output.json(report);
      return report.ok ? 0 : 1;
    }
    const { chalk } = ctx;
    const lines: string[] = [];
    for (const t of report.tables) lines.push(`${chalk.dim('table')}  ${t.table.padEnd(8)} ${t.file} (${t.rows} row${t.rows === 1 ? '' : 's'})`);
    if (report.plugins.length) lines.push(`${chalk.dim('plugins')} ${report.plugins.join(', ')}`);
    for (const p of report.problems) lines.push(`${chalk.red('error')}  ${p.text}`);
    for (const f of report.findings) {
      lines.push(`${chalk.yellow('finding')} ${f.code}: ${f.message}${f.examples.length ? ` (e.g. ${f.examples.join(', ')})` : ''}`);
    }
    lines.push(
      report.ok
        ? chalk.green(`${args[0]}: no problems found`)
        : `${args[0]}: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}, ${report.findings.length} finding${report.findings.length === 1 ? '' : 's'}`,
    );
    await ctx.output.text(`${lines.join('\n')}\n`);
    return report.ok ? 0 : 1;
  },
});

interface GenerateFlags {
  out: string;
  seed: string;
  contacts: string;
  orders: string;
  touches: string;
  from: string;
  to: string;
  format: string;
  plugins: string;
  force?: boolean;
}

function count(flag: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${flag}: "${value}" must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}

export const dataGenerate = defineCommand<GenerateFlags>({
  name: 'data generate',
  summary: 'write a deterministic synthetic dataset (for demos, tests and benchmarks)',
  options: [
    { flags: '--out <dir>', description: 'directory to write (must be empty or absent)' },
    { flags: '--seed <n>', description: 'random seed; the same flags give the same files', defaultValue: '1' },
    { flags: '--contacts <n>', description: 'number of contacts', defaultValue: '1000' },
    { flags: '--orders <n>', description: 'number of orders (refunds come on top)', defaultValue: '2000' },
    { flags: '--touches <n>', description: 'number of touches (clicks and opens)', defaultValue: '20000' },
    { flags: '--from <date>', description: 'first day of orders', defaultValue: '2024-01-01' },
    { flags: '--to <date>', description: 'last day of orders', defaultValue: '2024-06-30' },
    { flags: '--file-format <format>', description: 'csv or parquet', defaultValue: 'csv' },
    { flags: '--plugins <n>', description: 'number of plugins (tenants)', defaultValue: '1' },
    { flags: '--force', description: 'replace a non-empty --out directory' },
  ],
  examples: [
    'convx data generate --out /tmp/shop',
    'convx data generate --out /tmp/big --orders 2000000 --touches 10000000 --contacts 500000 --file-format parquet',
    'convx data generate --out /tmp/tenants --plugins 3 --seed 42',
  ],
  async run(ctx, _args, flags) {
    const f = flags as GenerateFlags & { fileFormat: string };
    if (!f.out) throw new UsageError('--out <dir> is required');
    for (const [name, value] of [['from', f.from], ['to', f.to]] as const) {
      if (!isValidDate(value)) throw new UsageError(`--${name}: "${value}" is not a date of the form YYYY-MM-DD`);
    }
    if (f.from > f.to) throw new UsageError(`--from ${f.from} is after --to ${f.to}`);
    if (f.fileFormat !== 'csv' && f.fileFormat !== 'parquet') {
      throw new UsageError(`--file-format: "${f.fileFormat}" is not csv or parquet`);
    }
    const { generateDataset } = await import('../local/generate.js');
    const result = await generateDataset({
      out: ctx.resolvePath(f.out),
      seed: count('seed', f.seed, 0, 2 ** 31),
      contacts: count('contacts', f.contacts, 1, 100_000_000),
      orders: count('orders', f.orders, 0, 1_000_000_000),
      touches: count('touches', f.touches, 0, 1_000_000_000),
      from: f.from,
      to: f.to,
      format: f.fileFormat,
      plugins: count('plugins', f.plugins, 1, 1000),
      force: f.force ?? false,
    });
    for (const file of result.files) ctx.log.info(`wrote ${file.file} (${file.rows} rows)`);
  },
});
