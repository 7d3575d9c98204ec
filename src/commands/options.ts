/**
 * Flag definitions that several commands share, and the constants their help
 * texts and handlers both use. Plain data: `convx --help` loads this module.
 */
import { field, parameters, type Operation, type Parameter, type ParameterOf } from '../model/parameters.js';
import type { OptionDefinition } from './registry.js';

/** The commander option of a query parameter, its flag kept literal (FlagsOf reads a handler's flags from it). */
export interface ParameterOption<P extends Parameter> extends OptionDefinition {
  readonly flags: P extends { flag: infer F } ? F : never;
}

/** A code list or a sort accumulates its values over repeats (`--country CZ --country sk,at`). */
const LIST_KINDS: readonly Parameter['kind'][] = ['codes', 'sort'];

/**
 * The flags of the query parameters an operation takes, in the table's order (model/parameters.ts);
 * `keep` picks some of them (a command that sets the others itself).
 */
export function parameterOptions<Op extends Operation, P extends ParameterOf<Op> = ParameterOf<Op>>(
  operation: Op,
  keep: (p: ParameterOf<Op>) => p is P = (_: ParameterOf<Op>): _ is P => true,
): ParameterOption<P>[] {
  return (parameters(operation) as ParameterOf<Op>[]).filter(keep).flatMap((p) => {
    const flag = field(p, 'flag');
    if (flag === undefined) return [];
    const option: OptionDefinition = { flags: flag, description: field(p, 'help')! };
    if (LIST_KINDS.includes(p.kind)) option.list = true;
    return [option as ParameterOption<P>];
  });
}

/** --from and --to. */
export const PERIOD_OPTIONS = parameterOptions('items', (p): p is Extract<ParameterOf<'items'>, { kind: 'date' }> => p.kind === 'date');

/** Flags without a default, a [flags, description] pair a line; the flags keep their literal types (FlagsOf). */
export function described<const Flags extends string>(rows: readonly (readonly [Flags, string])[]): { flags: Flags; description: string }[] {
  return rows.map(([flags, description]) => ({ flags, description }));
}

/** Not a query parameter: every page, walked by the command. */
export const ALL_OPTION = { flags: '--all', description: 'every row from --offset on, streamed' } as const;

/** What `convx order` searches in API mode without --from/--to. */
export const API_ORDER_DAYS = 365;

export { VALIDATE_FORMATS } from '../output/format.js';
