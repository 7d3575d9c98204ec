/** output/no-color.ts: the painter of uncoloured output answers as chalk at level 0, without loading chalk. */
import { backgroundColorNames, Chalk, foregroundColorNames, modifierNames, type ChalkInstance } from 'chalk';
import { describe, expect, it } from 'vitest';
import { NO_COLOR, painter, STYLES } from '../src/output/no-color.js';

const chalk = new Chalk({ level: 0 });
const ARGUMENTS: unknown[][] = [[], ['text'], [''], ['a', 'b'], [5], [null], [undefined], ['x', 1, null], [new Date(0)], [{ toString: () => 'object' }]];

/** The painter a chain of style names reaches from root. */
const reach = (root: ChalkInstance, names: readonly string[]) => names.reduce((c, name) => (c as unknown as Record<string, ChalkInstance>)[name]!, root);

describe('NO_COLOR: chalk at level 0 without chalk', () => {
  it("knows every style name chalk has, and nothing more", () => {
    expect([...STYLES].sort()).toEqual([...modifierNames, ...foregroundColorNames, ...backgroundColorNames].sort());
  });

  it('gives what chalk gives for every style, chained or not, whatever the arguments (visible: nothing)', () => {
    const chains = [...STYLES.map((s) => [s]), ['bold', 'red'], ['dim', 'bgBlue', 'underline'], ['visible'], ['red', 'visible'], ['visible', 'bold']];
    for (const names of chains) {
      for (const args of ARGUMENTS) {
        const label = `${names.join('.')}(${args.map(String).join(', ')})`;
        expect((reach(NO_COLOR, names) as (...a: unknown[]) => string)(...args), label).toBe((reach(chalk, names) as (...a: unknown[]) => string)(...args));
      }
    }
    expect(NO_COLOR('plain', 2)).toBe(chalk('plain', 2));
    expect(NO_COLOR.hex('#ff0000').bold('x')).toBe(chalk.hex('#ff0000').bold('x'));
    expect(NO_COLOR.bgAnsi256(12)('x')).toBe(chalk.bgAnsi256(12)('x'));
  });

  it('says level 0, and is no promise (a context holding it can be awaited)', async () => {
    expect(NO_COLOR.level).toBe(0);
    expect(NO_COLOR.red.level).toBe(0);
    expect((NO_COLOR as unknown as { then?: unknown }).then).toBeUndefined();
    expect(await Promise.resolve(NO_COLOR)).toBe(NO_COLOR);
  });

  it('painter(0) is NO_COLOR; a level above 0 is chalk, colouring', async () => {
    expect(await painter(0)).toBe(NO_COLOR);
    const coloured = await painter(1);
    expect(coloured.level).toBe(1);
    expect(coloured.red('x')).toBe(new Chalk({ level: 1 }).red('x'));
    expect(coloured.red('x')).not.toBe('x');
  });
});
