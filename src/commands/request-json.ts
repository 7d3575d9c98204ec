/**
 * A request file's JSON read with positions: where a syntax error is (line and
 * column, which V8's messages do not always say), and the line of each value a
 * finding can be about (`assets[1].html`, `audience.lists`, `options.sampleSize`),
 * so that findings point into the file. Linear, and iterative over the text's
 * length (a deep nesting only deepens the recursion as far as the nesting goes;
 * a stack overflow gives no position, never a crash).
 */

export interface JsonSyntaxError {
  message: string;
  line: number;
  column: number;
}

/** The first syntax error of a text that JSON.parse refused, undefined when it finds none. */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  try {
    new Scanner(text).document();
    return undefined;
  } catch (error) {
    if (!(error instanceof SyntaxAt)) return undefined;
    return { message: error.message, ...lineColumn(text, error.offset) };
  }
}

/** The line of each value of the request (by its path, `assets[0].html`); those under `assets` at any depth, the rest two deep. */
export function jsonLines(text: string): Map<string, number> {
  const scanner = new Scanner(text, new Map());
  try {
    scanner.document();
  } catch {
    // A text that is not JSON has no values to point at.
    return new Map();
  }
  return scanner.lines!;
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

class SyntaxAt extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/**
 * The values whose lines are kept: to this depth of path (`assets[0].variables.promo[2].code` is
 * six), and in an array its first elements: a finding points at an asset, a part of it or a
 * request field, and one deeper or further points at the nearest kept value above it. A file of
 * 300,000 short arrays kept 600,000 paths (88 MB); one nested 400 deep, paths of 2 kB each.
 */
const MAX_KEPT_DEPTH = 6;
const MAX_KEPT_ELEMENTS = 1000;

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;
const LITERALS = ['true', 'false', 'null'];

class Scanner {
  private at = 0;
  private line = 1;
  /** The next line break not yet counted (-1: none is left): each is found once, not looked for again from each value. */
  private nextBreak: number;

  constructor(
    private readonly text: string,
    readonly lines?: Map<string, number>,
  ) {
    this.nextBreak = text.indexOf('\n');
  }

  document(): void {
    this.value('', 0);
    this.space();
    if (this.at < this.text.length) this.fail('unexpected text after the JSON value');
  }

  private fail(message: string, offset = this.at): never {
    throw new SyntaxAt(message, offset);
  }

  private unexpected(): never {
    if (this.at >= this.text.length) this.fail('unexpected end of the file');
    this.fail(`unexpected ${JSON.stringify(this.text[this.at])}`);
  }

  private space(): void {
    WHITESPACE.lastIndex = this.at;
    WHITESPACE.exec(this.text);
    this.at = WHITESPACE.lastIndex;
  }

  /** The line of the current offset (counted forward only: offsets only grow). */
  private currentLine(): number {
    while (this.nextBreak >= 0 && this.nextBreak < this.at) {
      this.line++;
      this.nextBreak = this.text.indexOf('\n', this.nextBreak + 1);
    }
    return this.line;
  }

  /** Keeps the line of the value at path (depth: its steps): those under `assets` to MAX_KEPT_DEPTH, the rest two deep. */
  private record(path: string, depth: number): void {
    if (!this.lines || path === '') return;
    if (depth <= 2 || (depth <= MAX_KEPT_DEPTH && path.startsWith('assets['))) this.lines.set(path, this.currentLine());
  }

  /** A value at path (depth: its steps; a path of '' below the kept values, whose lines are not kept). */
  private value(path: string, depth: number): void {
    this.space();
    const c = this.text[this.at];
    if (c === '{') return this.object(path, depth);
    if (c === '[') return this.array(path, depth);
    if (c === '"') return void this.string();
    NUMBER.lastIndex = this.at;
    if (NUMBER.exec(this.text)) {
      this.at = NUMBER.lastIndex;
      return;
    }
    const literal = LITERALS.find((l) => this.text.startsWith(l, this.at));
    if (!literal) this.unexpected();
    this.at += literal.length;
  }

  private object(path: string, depth: number): void {
    this.at++;
    this.space();
    if (this.text[this.at] === '}') return void this.at++;
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') this.fail('expected a property name in double quotes');
      const keyAt = this.at;
      const key = this.string();
      this.space();
      if (this.text[this.at] !== ':') this.fail('expected ":" after a property name');
      this.at++;
      // past the kept values, no path is made (its length would grow with the nesting)
      const member = depth === 0 ? key : depth < MAX_KEPT_DEPTH && path ? `${path}.${key}` : '';
      const after = this.at;
      this.at = keyAt;
      this.record(member, depth + 1);
      this.at = after;
      this.value(member, depth + 1);
      this.space();
      if (this.text[this.at] === ',') this.at++;
      else if (this.text[this.at] === '}') return void this.at++;
      else this.fail('expected "," or "}" after a property');
    }
  }

  private array(path: string, depth: number): void {
    this.at++;
    this.space();
    if (this.text[this.at] === ']') return void this.at++;
    for (let i = 0; ; i++) {
      this.space();
      const element = path && depth < MAX_KEPT_DEPTH && i < MAX_KEPT_ELEMENTS ? `${path}[${i}]` : '';
      this.record(element, depth + 1);
      this.value(element, depth + 1);
      this.space();
      if (this.text[this.at] === ',') this.at++;
      else if (this.text[this.at] === ']') return void this.at++;
      else this.fail('expected "," or "]" after an element');
    }
  }

  /** A string's value; the offset of the first bad character when it is not one. */
  private string(): string {
    const start = this.at;
    this.at++;
    for (;;) {
      const c = this.text.charCodeAt(this.at);
      if (Number.isNaN(c)) this.fail('a string that is never closed', start);
      if (c === 0x22) break;
      if (c < 0x20) this.fail('a control character (a line break?) inside a string');
      if (c === 0x5c) {
        const next = this.text[this.at + 1];
        if (next === 'u' ? !/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at + 2, this.at + 6)) : !next || !'"\\/bfnrt'.includes(next)) {
          this.fail('a bad escape in a string');
        }
        this.at += next === 'u' ? 6 : 2;
      } else this.at++;
    }
    this.at++;
    return JSON.parse(this.text.slice(start, this.at)) as string;
  }
}
