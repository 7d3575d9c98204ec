/**
 * What a flag is (its definition, in commander's syntax) and, at the type level,
 * what commander gives a handler for a list of them (FlagsOf). Types only: the
 * definitions themselves are in commands/options.ts (each command's), globals.ts and
 * model/parameters.ts (the query parameters').
 */

export interface OptionDefinition {
  /** commander's syntax: `--from <date>`, `-o, --format <format>`, `--all`, `--no-color`. */
  flags: string;
  description: string;
  defaultValue?: string | boolean;
  /**
   * A list: each value may be comma-separated, and the flag may be repeated;
   * the values accumulate (`--country CZ --country sk,at` is `CZ,sk,at`).
   */
  list?: boolean;
}

/** The long name of a flag: `-q, --query <text>` is `query`. */
type LongName<F extends string> = F extends `${string}--${infer Rest}` ? (Rest extends `${infer Name} ${string}` ? Name : Rest) : never;
/** kebab-case to camelCase, as commander names a flag's value: `source-type` is `sourceType`. */
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
/** The key commander gives a flag's value (`--no-color` is `color`). */
type FlagKey<F extends string> = NameKey<LongName<F>>;
type NameKey<Name extends string> = Name extends `no-${infer Rest}` ? Camel<Rest> : Camel<Name>;
/**
 * A flag with a value `<x>` gives a string (a list flag: its values joined by commas), with an optional
 * one `[x]` a string or true when given bare, with variadic ones (`<x...>`) the strings; one without, a boolean.
 */
type FlagValue<F extends string> = F extends `${string}...${string}`
  ? string[]
  : F extends `${string}<${string}>${string}`
    ? string
    : F extends `${string}[${string}]${string}`
      ? string | true
      : boolean;

/**
 * The parsed flags of a list of option definitions, as commander gives them to
 * a handler: `FlagsOf<[{ flags: '--from <date>' }, { flags: '--all' }]>` is
 * `{ from?: string; all?: boolean }`; a flag with a default is always there. The definitions must keep their literal
 * types (`as const`), which is how a handler's options come from its command's
 * definition rather than from an interface written beside it.
 */
/**
 * The literal flags of some definitions, each definition apart (a definition typed only as
 * `string`, such as the render limits', has none: its flags are typed where it is defined).
 */
type LiteralFlags<Option> = Option extends { flags: infer Flags extends string } ? (string extends Flags ? never : Flags) : never;

/** The flags commander always gives a value: those with a default, and --no- flags (true unless given). */
type AlwaysGiven<Options extends readonly OptionDefinition[]> =
  | LiteralFlags<Extract<Options[number], { defaultValue: unknown }>>
  | Extract<LiteralFlags<Options[number]>, `${string}--no-${string}`>;

export type FlagsOf<Options extends readonly OptionDefinition[]> = {
  // Mapped over each flag (not each definition), so a definition whose flags are a union still types each flag apart.
  [Flag in Exclude<LiteralFlags<Options[number]>, AlwaysGiven<Options>> as FlagKey<Flag>]?: FlagValue<Flag>;
} & {
  [Flag in AlwaysGiven<Options> as FlagKey<Flag>]: FlagValue<Flag>;
};

