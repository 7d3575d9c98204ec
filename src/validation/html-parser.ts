/**
 * htmlparser2's Parser, the one way the validation's HTML checks read a template: loaded with
 * `require`, whose CommonJS build loads in about 22-27 ms where the ES module build takes 30-33
 * (Node scans an ES module package's files for their exports first).
 *
 * `parseHtml` bounds its work: htmlparser2 keeps its open elements in an array it adds to at the
 * front, so each element costs as much as the nesting around it, and 40,000 nested elements took
 * 1.4 s of the main thread (a request's time budget cannot stop a synchronous parse). A parse stops
 * at MAX_HTML_DEPTH nested elements and reads at most MAX_PARSED_CHARS; the checks then judge what
 * was read, and say so (`html_not_checked_whole`).
 */
import { createRequire } from 'node:module';
import type * as Htmlparser2 from 'htmlparser2';
import { withCommas } from '../words.js';

export const { Parser } = createRequire(import.meta.url)('htmlparser2') as typeof Htmlparser2;

/**
 * The most elements open at once a parse reads on to (e-mail HTML nests some tens deep): each
 * closing tag that closes nothing is still looked for among them all, so that 255,000 of them
 * under 1,020 open elements held the main thread for 2 s.
 */
export const MAX_HTML_DEPTH = 128;
/** The most characters of one part a parse reads (a request's body is at most 1 MiB; a rendered sample may be more). */
export const MAX_PARSED_CHARS = 2 * 1024 * 1024;

type Handler = Partial<NonNullable<ConstructorParameters<typeof Parser>[0]>>;

/** How far a parse read: whole, or stopped at a depth or a length (why, and where: the offset it reached). */
export type ParseExtent = { whole: true } | { whole: false; why: 'depth' | 'length'; offset: number };

type Options = ConstructorParameters<typeof Parser>[1];

/**
 * Parses html with the handlers `make` returns (given `start()`, the start offset of the token a
 * handler is called for), within MAX_HTML_DEPTH and MAX_PARSED_CHARS: how far it read.
 */
export function parseHtml(html: string, make: (start: () => number) => Handler, options: Options): ParseExtent {
  let depth = 0;
  let stopped: ParseExtent | undefined;
  // eslint-disable-next-line prefer-const -- the handlers read it once it is made
  let parser: InstanceType<typeof Parser>;
  const given = make(() => parser.startIndex);
  // Past the bound nothing reaches the handlers: the tokenizer ends the step it is in after pause()
  // (the element that crossed it would still get its onopentag).
  const quiet: Handler = Object.fromEntries(
    Object.entries(given).map(([name, handler]) => [name, (...args: unknown[]) => (stopped ? undefined : (handler as (...a: unknown[]) => void)(...args))]),
  );
  parser = new Parser(
    {
      ...quiet,
      onopentagname(name) {
        if (stopped) return;
        if (++depth > MAX_HTML_DEPTH) {
          stopped = { whole: false, why: 'depth', offset: parser.startIndex };
          parser.pause();
          return;
        }
        given.onopentagname?.(name);
      },
      onclosetag(name, implied) {
        depth--;
        if (!stopped) given.onclosetag?.(name, implied);
      },
    },
    options,
  );
  const long = html.length > MAX_PARSED_CHARS;
  parser.write(long ? html.slice(0, MAX_PARSED_CHARS) : html);
  if (stopped) return stopped;
  if (long) return { whole: false, why: 'length', offset: MAX_PARSED_CHARS };
  parser.end();
  return { whole: true };
}

/** Why a parse of HTML stopped, in words. */
export function notWhole(extent: Extract<ParseExtent, { whole: false }>): string {
  return extent.why === 'depth' ? `the HTML nests more than ${withCommas(MAX_HTML_DEPTH)} elements deep` : `the HTML is over ${MAX_PARSED_CHARS / 1024 / 1024} MiB`;
}
