/**
 * The commander program. Start-up stays cheap: this module loads commander, the
 * command registry (metadata only) and the global options; a command's handler,
 * the context (config, output writers, chalk) and everything heavy behind them
 * (DuckDB, the server, jose ...) are imported when a command runs, so `--help`
 * never loads them (test/startup.test.ts pins that).
 */
import { Command, CommanderError, Option } from 'commander';
import { GLOBAL_OPTIONS } from './commands/globals.js';
import { COMMANDS, GROUPS } from './commands/index.js';
import type { CommandHandler } from './commands/registry.js';
import type { GlobalOptions, Io } from './context.js';
import { ConvxError, ExitCode } from './errors.js';
import { packageVersion } from './version.js';

const GLOBAL_HELP = `
Modes:
  local    --data DIR (or CONVX_DATA): computes reports with DuckDB over exported files
  api      --api URL (or CONVX_API_URL) with a token: the same commands against a running service
  serve    convx serve --data DIR: answers the same interface over HTTP

Output goes to stdout; messages and progress go to stderr. The default format is
a table on a terminal and tab-separated values otherwise.

Exit codes: 0 ok, 1 findings or not found, 2 usage or data error, 4 auth refused,
5 API unreachable, 130 interrupted.

Examples:
  convx report --data samples/shop --from 2024-03-01 --to 2024-03-31
  convx items --data samples/shop --from 2024-03-01 --to 2024-03-31 -o json
  convx order o-17 --data samples/shop
  convx validate samples/deliveries/welcome.json --data samples/shop
  CONVX_JWT_SECRET=dev convx serve --data samples/shop
  convx data check samples/shop`;

/** Builds the commander program; `state.exitCode` receives the handler's exit code. */
export function createProgram(io: Io, state: { exitCode: number }): Command {
  const program = new Command('convx')
    .description('E-mail marketing conversion reports and delivery checks, from exported data (DuckDB) or a running service')
    .version(packageVersion(), '-V, --version')
    .addHelpText('after', GLOBAL_HELP)
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  for (const option of GLOBAL_OPTIONS) program.addOption(new Option(option.flags, option.description));

  const groups = new Map<string, Command>();
  for (const definition of COMMANDS) {
    const words = definition.name.split(' ');
    let parent = program;
    if (words.length === 2) {
      const group = words[0]!;
      if (!groups.has(group)) groups.set(group, program.command(group).description(GROUPS[group] ?? ''));
      parent = groups.get(group)!;
    }
    const command = parent.command(`${words.at(-1)!}${definition.args ? ` ${definition.args}` : ''}`);
    command.description(definition.summary);
    for (const option of definition.options ?? []) {
      command.option(option.flags, option.description, option.defaultValue as string | boolean | undefined);
    }
    if (definition.examples?.length) {
      command.addHelpText('after', `\nExamples:\n${definition.examples.map((e) => `  ${e}`).join('\n')}`);
    }
    command.action(async (...params: unknown[]) => {
      const cmd = params.at(-1) as Command;
      const globals = cmd.optsWithGlobals() as GlobalOptions & Record<string, unknown>;
      const { createContext } = await import('./context.js');
      const ctx = createContext(io, {
        newProfile: definition.createsProfile ?? false,
        ...(definition.formats ? { formats: definition.formats } : {}),
        data: globals.data,
        api: globals.api,
        deliveryApi: globals.deliveryApi,
        profile: globals.profile,
        tokenFile: globals.tokenFile,
        timeout: globals.timeout,
        plugin: globals.plugin,
        referenceCurrency: globals.referenceCurrency,
        format: globals.format,
        fields: globals.fields,
        color: globals.color !== false,
        quiet: globals.quiet,
        formulaEscape: globals.formulaEscape !== false,
      } as GlobalOptions);
      const handler = (await definition.load()) as CommandHandler;
      const code = await handler.run(ctx, cmd.args, cmd.opts());
      state.exitCode = code ?? 0;
    });
  }
  return program;
}

/** Turns any error into a message on stderr and an exit code; a stack only with CONVX_DEBUG. */
export async function reportError(error: unknown, io: Io): Promise<number> {
  if (error instanceof CommanderError) {
    // commander has printed its own message already
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') {
      return ExitCode.ok;
    }
    return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  }
  const { Chalk } = await import('chalk');
  const chalk = new Chalk({ level: io.stderrIsTTY && !io.env.NO_COLOR ? 1 : 0 });
  if (error instanceof ConvxError) {
    io.stderr.write(`${chalk.red('convx: error:')} ${error.message}\n`);
    if (error.hint) io.stderr.write(`${chalk.dim(`hint: ${error.hint}`)}\n`);
    if (io.env.CONVX_DEBUG) io.stderr.write(`${error.stack}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr.write(`${chalk.red('convx: unexpected error:')} ${message}\n`);
  if (io.env.CONVX_DEBUG) io.stderr.write(`${error instanceof Error ? error.stack : ''}\n`);
  else io.stderr.write(`${chalk.dim('hint: set CONVX_DEBUG=1 for details')}\n`);
  return ExitCode.unexpected;
}

/**
 * `--sort -datetime` would read as an unknown option "-datetime"; a sort value
 * starting with "-" is a descending field, so it is joined to its flag.
 */
export function joinSortValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1];
    if (argv[i] === '--sort' && next !== undefined && /^-[A-Za-z]/.test(next)) {
      out.push(`--sort=${next}`);
      i++;
    } else out.push(argv[i]!);
  }
  return out;
}

/** Runs convx on argv (without node and script) and returns the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const state = { exitCode: 0 };
  try {
    const program = createProgram(io, state);
    if (argv.length === 0) {
      program.outputHelp();
      return ExitCode.usage;
    }
    await program.parseAsync(joinSortValues(argv), { from: 'user' });
    return state.exitCode;
  } catch (error) {
    return await reportError(error, io);
  }
}
