import type { Context } from '../context.js';
import type { AnyFormat } from '../output/formats.js';
import type { OptionDefinition } from '../flags.js';

/** What a command does once its flags are parsed: the module a command loads only when it runs. */
export interface CommandHandler<Options = Record<string, unknown>> {
  /** Returns the exit code (0 when nothing is returned). */
  run(ctx: Context, args: string[], options: Options): Promise<number | void>;
}

/**
 * One command as `--help` and shell completion see it: plain metadata, cheap to
 * load, and `load()`, which imports the handler (and through it DuckDB, the
 * server, jose ...) only when the command runs.
 */
export interface CommandDefinition {
  /** "report", or "data check" for a subcommand of a group. */
  name: string;
  summary: string;
  /** Positional arguments in commander's syntax, e.g. "<ORDER_ID>". */
  args?: string;
  options?: readonly OptionDefinition[];
  examples?: readonly string[];
  /** The output formats it takes, when not the reporting ones. */
  formats?: readonly AnyFormat[];
  /**
   * The global flags it honours, by long name ("--data", "--format", ...): its
   * --help lists them, and giving another one on the command line is a usage
   * error. Default: COMMAND_GLOBALS in globals.ts, else every global flag.
   */
  globals?: readonly string[];
  /** The global flags it cannot run without (token: --plugin): an empty value of one is not met with "or leave it out". */
  requiredGlobals?: readonly string[];
  /** It writes the profile that --profile names, so that profile need not exist yet. */
  createsProfile?: boolean;
  /**
   * Its first argument names a config setting it replaces or removes (config set, config unset): a
   * stored value of that setting which the file's check refuses does not stop it (config-file.ts, Repair).
   */
  repairsSetting?: boolean;
  /**
   * It sets the config up or shows it (convx config, init, auth): a stored setting which the file's
   * check refuses is a warning, left unused and kept as it is, not an error (config-file.ts, ConfigRead).
   */
  toleratesWrongSettings?: boolean;
  /**
   * It runs without the config file's settings (completion's scripts, its values from flags), as a
   * command that takes no --profile does: a config file it cannot read is a warning, not an error.
   */
  configOptional?: boolean;
  load(): Promise<CommandHandler<never>>;
}

export function defineHandler<Options>(handler: CommandHandler<Options>): CommandHandler<Options> {
  return handler;
}
