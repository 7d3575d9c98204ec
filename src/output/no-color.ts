/**
 * The painters of a command's output and messages (chalk instances). Where nothing is coloured
 * (output to a pipe or a file, NO_COLOR, --no-color: level 0) a command gets NO_COLOR, which
 * answers as chalk does at level 0 without loading chalk (about 13 ms of every such command's
 * start): a chain of styles gives its text back, one argument as `'' + text`, several joined by a
 * space; `visible` gives ''. test/no-color.test.ts holds it against chalk itself.
 */
import type { ChalkInstance } from 'chalk';

/** chalk's style names (its modifierNames, foregroundColorNames and backgroundColorNames; the test checks the list). */
export const STYLES = [
  ...['reset', 'bold', 'dim', 'italic', 'underline', 'overline', 'inverse', 'hidden', 'strikethrough'],
  ...['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white', 'blackBright', 'gray', 'grey'],
  ...['redBright', 'greenBright', 'yellowBright', 'blueBright', 'magentaBright', 'cyanBright', 'whiteBright'],
  ...['bgBlack', 'bgRed', 'bgGreen', 'bgYellow', 'bgBlue', 'bgMagenta', 'bgCyan', 'bgWhite', 'bgBlackBright', 'bgGray', 'bgGrey'],
  ...['bgRedBright', 'bgGreenBright', 'bgYellowBright', 'bgBlueBright', 'bgMagentaBright', 'bgCyanBright', 'bgWhiteBright'],
] as const;
/** chalk's styles that take a colour first (chalk.hex('#fff')('text')). */
const COLOR_FUNCTIONS = new Set(['rgb', 'hex', 'ansi256', 'bgRgb', 'bgHex', 'bgAnsi256']);
const STYLE_NAMES = new Set<string | symbol>(STYLES);

/** A chain of styles at level 0; empty: after `visible`, which prints nothing without colour. */
function chain(empty: boolean): ChalkInstance {
  const paint = (...texts: unknown[]): string => (empty ? '' : texts.length === 1 ? '' + (texts[0] as string) : texts.join(' '));
  const self: ChalkInstance = new Proxy(paint, {
    get(_, key) {
      if (key === 'level') return 0;
      if (key === 'visible') return empty ? self : chain(true);
      if (STYLE_NAMES.has(key)) return self;
      if (typeof key === 'string' && COLOR_FUNCTIONS.has(key)) return () => self;
      return undefined;
    },
  }) as unknown as ChalkInstance;
  return self;
}

/** chalk at level 0, without chalk. */
export const NO_COLOR: ChalkInstance = chain(false);

/** The painter of a colour level: NO_COLOR at 0, else chalk's (loaded then). */
export async function painter(level: 0 | 1 | 2 | 3): Promise<ChalkInstance> {
  if (level === 0) return NO_COLOR;
  const { Chalk } = await import('chalk');
  return new Chalk({ level });
}
