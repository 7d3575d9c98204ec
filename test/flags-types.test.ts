/**
 * A handler's flags are typed from its command's definition (FlagsOf, commands/flags.ts):
 * these type assertions are checked by `tsc -b tsconfig.test.json` (part of `npm test`), and
 * the runtime test pins the naming rule the types mirror against commander's own.
 */
import { Option } from 'commander';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { GLOBAL_OPTIONS } from '../src/globals.js';
import { COMMANDS } from '../src/commands/index.js';
import type { CommandFlags } from '../src/commands/options.js';
import type { FlagsOf } from '../src/flags.js';
import { flagKey } from '../src/model/parameters.js';

describe('flags typed from their definitions', () => {
  it('names each flag as commander does, with a string for a value and a boolean for a switch', () => {
    type Flags = FlagsOf<
      readonly [
        { flags: '-q, --query <text>'; description: '' },
        { flags: '--source-type <type>'; description: '' },
        { flags: '--all'; description: '' },
        { flags: '--no-verify'; description: '' },
        { flags: '--port <port>'; description: ''; defaultValue: '8080' },
        { flags: '--color [when]'; description: '' },
        { flags: '--tag <tags...>'; description: '' },
      ]
    >;
    expectTypeOf<keyof Flags>().toEqualTypeOf<'query' | 'sourceType' | 'all' | 'verify' | 'port' | 'color' | 'tag'>();
    expectTypeOf<Flags['color']>().toEqualTypeOf<string | true | undefined>();
    expectTypeOf<Flags['tag']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<Flags['query']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Flags['sourceType']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Flags['all']>().toEqualTypeOf<boolean | undefined>();
    // a --no- flag and a flag with a default always have a value
    expectTypeOf<Flags['verify']>().toEqualTypeOf<boolean>();
    expectTypeOf<Flags['port']>().toEqualTypeOf<string>();
  });

  it("gives each command's handler exactly its flags: the query parameters' from the table, its own, nothing else", () => {
    expectTypeOf<keyof CommandFlags<'report'>>().toEqualTypeOf<
      'from' | 'to' | 'month' | 'since' | 'lastMonth' | 'ytd' | 'tz' | 'country' | 'currency' | 'query' | 'sort' | 'limit' | 'offset' | 'compare' | 'all' | 'breakdown' | 'output' | 'open'
    >();
    // drill's target fixes the source: no source filters
    expectTypeOf<keyof CommandFlags<'drill'>>().toEqualTypeOf<
      'from' | 'to' | 'month' | 'since' | 'lastMonth' | 'ytd' | 'tz' | 'contact' | 'order' | 'country' | 'currency' | 'sort' | 'limit' | 'offset' | 'all'
    >();
    expectTypeOf<CommandFlags<'items'>['sourceType']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CommandFlags<'total'>['month']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CommandFlags<'trend'>['lastMonth']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<CommandFlags<'serve'>['host']>().toEqualTypeOf<string>();
    expectTypeOf<CommandFlags<'serve'>['poolSize']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CommandFlags<'serve'>['allowTokensWithoutExp']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<CommandFlags<'auth login'>['verify']>().toEqualTypeOf<boolean>();
    expectTypeOf<CommandFlags<'init'>['verify']>().toEqualTypeOf<boolean>();
    expectTypeOf<CommandFlags<'data generate'>['fileFormat']>().toEqualTypeOf<string>();
  });

  it("names every flag's value as commander does (the rule the types mirror)", () => {
    const definitions = [...GLOBAL_OPTIONS, ...COMMANDS.flatMap((c) => c.options ?? [])];
    expect(definitions.length).toBeGreaterThan(40);
    for (const definition of definitions) expect(flagKey(definition.flags), definition.flags).toBe(new Option(definition.flags).attributeName());
  });
});
