/**
 * The commander program. Start-up stays cheap: this module loads commander, the
 * command registry (metadata only) and the global options; a command's handler,
 * the context (config, output writers, chalk) and everything heavy behind them
 * (DuckDB, the server, jose ...) are imported when a command runs, so `--help`
 * never loads them (test/startup.test.ts pins that).
 */
import { Command, CommanderError, Option } from 'commander';
import { COMMAND_FORMATS, commandFormats, commandGlobals, pageFormats } from './commands/globals.js';
import { colorLevel, GLOBAL_OPTIONS, noColorAsked, type GlobalFlags } from './globals.js';
import { EMPTY_REQUIRED_VALUE, EMPTY_VALUE, flagKey } from './model/parameters.js';
import { ANY_FORMATS, FORMATS } from './output/formats.js';
import { COMMANDS, GROUPS } from './commands/index.js';
import type { OptionDefinition } from './flags.js';
import type { CommandDefinition, CommandHandler } from './commands/registry.js';
import type { BackendFactory, Io, LookupsFactory } from './context.js';
import { ConvxError, ExitCode, InterruptedError, OutputError, PipeClosedError, UsageError, writeFailure } from './errors.js';
import { packageVersion } from './version.js';

// commander is imported as an ES module here: the program that runs is the bundle of
// scripts/bundle.js (dist/convx.js), which holds commander's CommonJS code, so nothing is
// resolved or read for it at start. (dist/cli.js, unbundled, goes through commander's ES module
// wrapper, some 5 ms more; only the docs' generator and the tests import it.)

const GLOBAL_HELP = `
Modes:
  local    --data DIR (or CONVX_DATA): computes reports with DuckDB over exported files
  api      --api URL (or CONVX_API_URL) with a token: the same commands against a running service
  serve    convx serve --data DIR: answers the same interface over HTTP

Output goes to stdout; messages and progress go to stderr. The default format is
a table on a terminal and tab-separated values otherwise.

Exit codes: 0 ok, 1 findings or an unexpected failure, 2 usage, data or output
error, 3 not found, 4 auth refused, 5 API unreachable, 130 interrupted.

Examples:
  convx report --data samples/shop --from 2024-03-01 --to 2024-03-31
  convx items --data samples/shop --from 2024-03-01 --to 2024-03-31 -o json
  convx order o-17 --data samples/shop
  convx validate samples/deliveries/welcome.json --data samples/shop
  CONVX_JWT_SECRET=dev convx serve --data samples/shop
  convx data check samples/shop`;

/** What a caller may swap in for the real thing (a test: its own backend). */
export interface ProgramOptions {
  /** Opens the backend a command works on; default openDefaultBackend (src/backends.ts). */
  backends?: BackendFactory;
  /** Opens what completion looks values up in; default openDefaultLookups (src/backends.ts), or the backend of `backends` when a test gives one. */
  lookups?: LookupsFactory;
}

/**
 * The global flags of a command's invocation, as commander parsed them, and only those (not
 * the command's own). The one cast at commander's boundary: optsWithGlobals() returns an
 * untyped record, and the options it holds were built from GLOBAL_OPTIONS, whose type GlobalFlags is.
 */
function parsedFlags(cmd: Command): GlobalFlags {
  const all = cmd.optsWithGlobals<Record<string, unknown>>();
  const flags = Object.fromEntries(GLOBAL_OPTIONS.map((o) => [flagKey(o.flags), all[flagKey(o.flags)]])) as GlobalFlags;
  return flags.format === undefined ? flags : { ...flags, format: formatName(flags.format) };
}

/** -o in any case, as codes are (`-o TSV` is tsv); a name no format has stays as typed, for the error to quote. */
function formatName(value: string): string {
  const lower = value.toLowerCase();
  return (ANY_FORMATS as readonly string[]).includes(lower) ? lower : value;
}

/**
 * What a run shares with its program: the exit code a handler sets, and whether --no-color is asked
 * (from the arguments before they are parsed, then as commander parsed it), for the colour of an error.
 */
export interface ProgramState {
  exitCode: number;
  noColor?: boolean;
  /** commander's writes to stdout (help, version): done when the last one is, and the first failure of them. */
  written?: Promise<void>;
  writeFailed?: Error;
  /** Said just before "interrupted" (Ctrl-C at a prompt): CONVX_TIMINGS's timings so far, as a signal has them said (runTimed). */
  beforeInterrupted?: () => void;
}

/**
 * The global flags as `convx --help` lists them: -o with the formats some commands print beyond
 * the common ones too (-o github of validate, ...), which each command's --help lists as its own.
 */
function programOptions(): Option[] {
  const more = [...new Set(COMMANDS.flatMap((definition) => commandFormats(definition)))].filter((f) => !(FORMATS as readonly string[]).includes(f));
  return GLOBAL_OPTIONS.map((definition) =>
    toOption(definition.flags.includes('--format') && more.length ? { ...definition, description: `output format: ${FORMATS.join(', ')}; some commands also ${more.join(', ')} (their --help lists theirs)` } : definition),
  );
}

/** Builds the commander program; `state.exitCode` receives the handler's exit code. */
export function createProgram(io: Io, state: ProgramState, options: ProgramOptions = {}): Command {
  const program = new Command('convx')
    .description('E-mail marketing conversion reports and delivery checks, from exported data (DuckDB) or a running service')
    .version(packageVersion(), '-V, --version')
    .addHelpText('after', GLOBAL_HELP)
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        state.written = new Promise((resolve) => {
          io.stdout.write(text, (error?: Error | null) => {
            if (error) state.writeFailed ??= error;
            resolve();
          });
        });
      },
      writeErr: (text) => io.stderr.write(text),
      // commander's own errors ("error: unknown option ...") read like the rest: "convx: error: ..."
      outputError: (text, write) => write(`${hinted(text, io, state).replace(/^error:/, errorLabel(io, state))}${elsewhere(text, io, state)}`),
    });

  const globalOptions = programOptions();
  for (const option of globalOptions) program.addOption(option);

  const groups = new Map<string, Command>();
  for (const definition of COMMANDS) {
    const words = definition.name.split(' ');
    let parent = program;
    if (words.length === 2) {
      const group = words[0]!;
      if (!groups.has(group)) groups.set(group, program.command(group).description(GROUPS[group] ?? '').addHelpText('after', groupExamples(group)));
      parent = groups.get(group)!;
    }
    const command = parent.command(`${words.at(-1)!}${definition.args ? ` ${definition.args}` : ''}`);
    command.description(definition.summary);
    for (const option of definition.options ?? []) command.addOption(toOption(option));
    const honoured = commandGlobals(definition);
    const honours = (option: Option) => honoured.includes(option.long ?? '');
    // Its --help lists the global flags it honours, under "Global Options", -o with the formats it prints.
    const formats = commandFormats(definition);
    const shown = globalOptions
      .filter((o) => !o.hidden && honours(o))
      .map((o) => (o.long === '--format' ? new Option(o.flags, `output format: ${formats.join(', ')}`) : o));
    command.configureHelp({ showGlobalOptions: true, visibleGlobalOptions: () => shown });
    if (definition.examples?.length) {
      command.addHelpText('after', `\nExamples:\n${definition.examples.map((e) => `  ${e}`).join('\n')}`);
    }
    // commander calls the action with the command as `this` (and as its last argument).
    command.action(async function (this: Command) {
      const cmd = this;
      const globals = parsedFlags(cmd);
      // From here on, the flag as commander parsed it decides the colour of an error too.
      state.noColor = globals.color === false;
      const formatFlag = typedFormatFlag((program as Command & { rawArgs: string[] }).rawArgs);
      refuseUnhonoured(cmd, definition.name, globalOptions, honours, formatFlag);
      refuseEmptyArgument(cmd.args, definition.args);
      const textFormats = COMMAND_FORMATS[definition.name];
      if (textFormats && globals.format !== undefined && !textFormats.includes(globals.format)) {
        throw new UsageError(`${formatFlag}: "${globals.format}" is not one of ${textFormats.join(', ')}`);
      }
      const [{ createContext }, factories] = await Promise.all([import('./context.js'), defaultFactories(options)]);
      const parsed = pageFormats(definition); // -o's formats: validate's own, html for the commands printing pages, else the reporting ones
      const ctx = await createContext(
        io,
        { ...globals, newProfile: definition.createsProfile ?? false, ...configRead(definition, cmd.args), ...(parsed !== FORMATS ? { formats: parsed } : {}), formatFlag },
        factories.backends,
        factories.lookups,
      );
      // commander's boundary: cmd.opts() holds the flags built from this definition's options, which is
      // what the handler's type (CommandFlags of options.ts) says; commander itself types them as a record.
      const handler = (await definition.load()) as CommandHandler;
      const code = await handler.run(ctx, cmd.args, cmd.opts());
      state.exitCode = code ?? 0;
    });
  }
  return program;
}

/**
 * How the context reads the config: tolerant of wrong settings (GlobalOptions.tolerant: a command
 * that sets the config up or shows it, or that takes no --profile, whose settings it does not use),
 * of a file it cannot read at all where it needs none (GlobalOptions.configOptional: no --profile,
 * or completion), and the setting a command replaces or removes (config set|unset KEY: GlobalOptions.repairs).
 */
function configRead(definition: CommandDefinition, args: readonly string[]): { repairs?: string; tolerant: boolean; configOptional: boolean } {
  const noProfile = !commandGlobals(definition).includes('--profile');
  const read = { tolerant: (definition.toleratesWrongSettings ?? false) || noProfile, configOptional: (definition.configOptional ?? false) || noProfile };
  return definition.repairsSetting && args[0] !== undefined ? { repairs: args[0], ...read } : read;
}

/** A command's first example that runs it (data shards' first runs data import, which it needs first). */
const ownExample = (c: CommandDefinition) => c.examples?.find((e) => e.startsWith(`convx ${c.name} `) || e === `convx ${c.name}`);

/** A group's examples (`convx data --help`): the first example of each of its commands that runs it. */
function groupExamples(group: string): string {
  const examples = COMMANDS.filter((c) => c.name.startsWith(`${group} `)).flatMap((c) => ownExample(c) ?? []);
  return examples.length ? `\nExamples:\n${examples.map((e) => `  ${e}`).join('\n')}` : '';
}

/** The hint of an empty flag value or argument. */
const EMPTY_HINT = 'an unset shell variable gives an empty value';

/**
 * An empty argument is refused as an empty flag value is (toOption), named by the command's usage
 * (`<request>`: "the request argument"): `convx validate "$FILE"` with FILE unset would read the current folder.
 */
function refuseEmptyArgument(args: readonly string[], usage: string | undefined): void {
  const at = args.indexOf('');
  if (at < 0) return;
  const names = (usage ?? '').split(' ').filter(Boolean);
  // `<detailUrl|sourceId|name>`: "the detailUrl, sourceId or name argument"
  const name = names[Math.min(at, names.length - 1)]?.replace(/\.\.\.|[<>[\]]/g, '').split('|');
  const words = name && name.length > 1 ? `${name.slice(0, -1).join(', ')} or ${name.at(-1)}` : name?.[0];
  throw new UsageError(words ? `the ${words} argument is empty` : 'an argument is empty', [], EMPTY_HINT);
}

/** A global flag given to a command that does not honour it is an error, not silently ignored (named as typed: -o or --format). */
function refuseUnhonoured(cmd: Command, name: string, globalOptions: readonly Option[], honours: (option: Option) => boolean, formatFlag: string): void {
  const typed = (option: Option) => (option.long === '--format' ? formatFlag : option.long!);
  const own = (o: Option) => cmd.options.some((mine) => mine.attributeName() === o.attributeName());
  const unused = globalOptions.filter((o) => !honours(o) && !own(o) && cmd.getOptionValueSourceWithGlobals(o.attributeName()) === 'cli');
  if (!unused.length) return;
  const names = unused.map(typed);
  const takes = globalOptions.filter(honours).map(typed);
  throw new UsageError(
    `${names.length === 1 ? `${names[0]} does` : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} do`} not apply to convx ${name}`,
    [],
    `convx ${name} takes ${takes.length ? takes.join(', ') : 'no global flags'} (see convx ${name} --help)`,
  );
}

/** The factories a command's context opens its backend and look-ups with: the caller's, else those of backends.ts. */
async function defaultFactories(options: ProgramOptions): Promise<{ backends: BackendFactory; lookups?: LookupsFactory }> {
  const { openDefaultBackend, openDefaultLookups } = await import('./backends.js');
  if (options.backends) return { backends: options.backends, ...(options.lookups ? { lookups: options.lookups } : {}) };
  return { backends: openDefaultBackend, lookups: options.lookups ?? openDefaultLookups };
}

/**
 * A commander option from its definition; a list flag accumulates its values over repeats. A flag
 * that takes a value refuses an empty one (EMPTY_VALUE), each of a list's repeats too: every flag of
 * every command, global flags and query parameters alike, so none reads `--source ''` as absent.
 */
function toOption(definition: OptionDefinition): Option {
  const option = new Option(definition.flags, definition.description);
  if (definition.defaultValue !== undefined) option.default(definition.defaultValue);
  if (!option.required && !option.optional) return option;
  // A global flag that a command requires (token's --plugin): leaving it out is no way out there.
  const required = COMMANDS.some((c) => c.requiredGlobals?.includes(option.long ?? ''));
  return option.argParser((value: string, previous: string | undefined) => {
    if (value === '') throw new UsageError(`${option.long}: ${required ? EMPTY_REQUIRED_VALUE : EMPTY_VALUE}`, [], EMPTY_HINT);
    return definition.list && previous !== undefined ? `${previous},${value}` : value;
  });
}

/** How the format flag was typed, -o or --format (the last one given), for messages. */
export function typedFormatFlag(argv: readonly string[]): string {
  let typed = '--format';
  for (const arg of argv) {
    if (arg === '--') break;
    if (arg === '--format' || arg.startsWith('--format=')) typed = '--format';
    else if (/^-o/.test(arg)) typed = '-o';
  }
  return typed;
}

/** For "unknown option '--breakdown'": a hint naming the commands that take it, if any. */
function elsewhere(text: string, io: Io, state: ProgramState): string {
  const flag = /^error: unknown option '(--[^'=]+)/.exec(text)?.[1];
  if (!flag) return '';
  const takers = COMMANDS.filter((c) => c.options?.some((o) => o.flags.split(/[ ,|]+/).includes(flag))).map((c) => `convx ${c.name}`);
  if (!takers.length) return '';
  return `${hintLine(`${flag} is a flag of ${takers.join(', ')}`, io, state)}\n`;
}

/** commander's "(Did you mean --limit?)" as the hint line every other error gives ("hint: did you mean --limit?"). */
function hinted(text: string, io: Io, state: ProgramState): string {
  return text.replace(/^\(Did you mean (.+)\?\)$/m, (_, name: string) => hintLine(`did you mean ${name}?`, io, state));
}

/** "hint: …", dim where stderr takes colours (as the logger writes a hint). */
function hintLine(text: string, io: Io, state: ProgramState): string {
  const hint = `hint: ${text}`;
  return colours(io, state) ? `\x1b[2m${hint}\x1b[22m` : hint;
}

/** "convx: error:", red where stderr takes colours (as reportError writes it). */
function errorLabel(io: Io, state: ProgramState): string {
  const plain = 'convx: error:';
  return colours(io, state) ? `\x1b[31m${plain}\x1b[39m` : plain;
}

/** Whether an error is coloured: stderr's colour level by the rule of every output (globals.ts), with the --no-color of the arguments. */
function colours(io: Io, state: ProgramState): boolean {
  return colorLevel(io.stderrIsTTY, io.env, !state.noColor) > 0;
}

/** Turns any error into a message on stderr and an exit code; a stack only with CONVX_DEBUG. */
export async function reportError(error: unknown, io: Io, state: ProgramState): Promise<number> {
  if (error instanceof CommanderError) {
    // commander has printed its own message already
    // --help and --version; a group without its subcommand (`convx data`) is commander's help as an error
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || (error.code === 'commander.help' && error.exitCode === 0)) {
      return ExitCode.ok;
    }
    return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  }
  // as bin/convx.js says it when SIGINT ends a command: not an error
  if (error instanceof InterruptedError) {
    state.beforeInterrupted?.();
    io.stderr.write('\ninterrupted\n');
    return error.exitCode;
  }
  // A closed pipe (convx … | head) is not an error: nothing to say (validate catches it itself and keeps its verdict).
  if (error instanceof PipeClosedError) return error.exitCode;
  const { painter } = await import('./output/no-color.js');
  const chalk = await painter(colorLevel(io.stderrIsTTY, io.env, !state.noColor));
  // A message may quote a data value (an id, a name, a file's line): no control character reaches the terminal.
  const { safeLines } = await import('./output/terminal.js');
  if (error instanceof ConvxError) {
    const { createLogger } = await import('./output/logger.js');
    createLogger(io.stderr, chalk, { quiet: false, terminal: false }).error(error);
    if (io.env.CONVX_DEBUG) io.stderr.write(`${error.stack}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr.write(`${chalk.red('convx: unexpected error:')} ${safeLines(message)}\n`);
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
export async function run(argv: string[], io: Io, options: ProgramOptions = {}): Promise<number> {
  return io.env.CONVX_TIMINGS ? runTimed(argv, io, options) : runCommand(argv, io, options);
}

async function runCommand(argv: string[], io: Io, options: ProgramOptions, beforeInterrupted?: () => void): Promise<number> {
  const state: ProgramState = { exitCode: 0, noColor: noColorAsked(argv), ...(beforeInterrupted ? { beforeInterrupted } : {}) };
  const code = await runProgram(argv, io, options, state);
  // commander's help or version that could not be written (a command's results fail in their writer, output/sink.ts)
  await state.written;
  if (state.writeFailed === undefined || code !== ExitCode.ok) return code;
  const closed = (state.writeFailed as NodeJS.ErrnoException).code === 'EPIPE';
  return await reportError(closed ? new PipeClosedError() : new OutputError(`cannot write the output: ${writeFailure(state.writeFailed)}`), io, state);
}

/**
 * runCommand with the steps' timings recorded, printed on stderr when it ends, after its output and
 * any error (CONVX_TIMINGS, timings.ts); or, when a signal ends the process first (Ctrl-C), the
 * timings so far, the steps still running marked so, before it exits (Io.onSignalExit).
 */
async function runTimed(argv: string[], io: Io, options: ProgramOptions): Promise<number> {
  const started = performance.now();
  // shell completion prints nothing on stderr, whatever the shell exports
  if (argv[0] === '__complete') return runCommand(argv, io, options);
  const { formatTimings, Timings, timingsAsked, withTimings } = await import('./timings.js');
  if (!timingsAsked(io.env)) return runCommand(argv, io, options);
  const timings = new Timings();
  const print = (lead = '') => {
    const now = performance.now();
    // From a process's start (bin/convx.js): the time before run() too; else the command's own.
    const clock = io.startedAt === undefined ? { total: now - started } : { before: started - io.startedAt, total: now - io.startedAt };
    io.stderr.write(`${lead}${formatTimings(timings.list(now), clock)}`);
  };
  // on a signal (the process exits then) or Ctrl-C at a prompt, on a line of their own before "interrupted" (after the
  // ^C a terminal echoes, or a progress line); the prompt's once, not again as the command ends
  let said = false;
  const say = (lead = '') => {
    if (said) return;
    said = true;
    print(lead);
  };
  const unsubscribe = io.onSignalExit?.(() => print('\n'));
  try {
    return await withTimings(timings, () => runCommand(argv, io, options, () => say('\n')));
  } finally {
    unsubscribe?.();
    say();
  }
}

async function runProgram(argv: string[], io: Io, options: ProgramOptions, state: ProgramState): Promise<number> {
  try {
    // The hidden engine of shell completion (commands/complete.ts): not a command of the registry, never in --help.
    if (argv[0] === '__complete') {
      const [{ runComplete }, factories] = await Promise.all([import('./commands/complete.js'), defaultFactories(options)]);
      return await runComplete(argv.slice(1), io, factories);
    }
    const program = createProgram(io, state, options);
    // No command is a usage error, as a group without its subcommand is (`convx data`): the help on stderr, exit 2.
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return ExitCode.usage;
    }
    await program.parseAsync(joinSortValues(argv), { from: 'user' });
    return state.exitCode;
  } catch (error) {
    return await reportError(error, io, state);
  }
}
