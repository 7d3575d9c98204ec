import type { Context } from '../context.js';

export interface OptionDefinition {
  flags: string;
  description: string;
  defaultValue?: string | boolean;
}

/** One command: its flags and a handler that gets parsed options and a context. */
export interface CommandDefinition<Options = Record<string, unknown>> {
  /** "report", or "data check" for a subcommand of a group. */
  name: string;
  summary: string;
  /** Positional arguments in commander's syntax, e.g. "<ORDER_ID>". */
  args?: string;
  options?: OptionDefinition[];
  examples?: string[];
  /** The output formats it takes, when not the reporting ones. */
  formats?: readonly string[];
  /** It writes the profile that --profile names, so that profile need not exist yet. */
  createsProfile?: boolean;
  /** Returns the exit code (0 when nothing is returned). */
  run(ctx: Context, args: string[], options: Options): Promise<number | void>;
}

export function defineCommand<Options>(definition: CommandDefinition<Options>): CommandDefinition<Options> {
  return definition;
}
