/**
 * The request files of `convx validate`: several paths, and globs that convx
 * expands itself (`'deliveries/*.json'`, quoted so that every shell and CI
 * runner gives the same files: `*`, `?`, `[…]` within a name, `**` for any
 * depth), each read into its request body or the reason it cannot be read
 * (with the line and column of a JSON syntax error).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { readFailure, UsageError } from '../errors.js';
import { jsonLines, jsonSyntaxError } from './request-json.js';

/** One request as named on the command line: its label in outputs and, unless stdin, its path. */
export interface RequestSource {
  /** As typed, or as the glob's match relative to where the glob was typed; "stdin" for -. */
  label: string;
  /** The file as typed or matched, for annotations and to read (undefined for stdin). */
  file?: string;
}

/** A request read: its body and the line of each value, or why it cannot be read (an error to report, with a place when there is one). */
export type ReadRequest =
  | { body: Record<string, unknown>; lines: Map<string, number> }
  | { problem: UsageError; line?: number; column?: number };

const MAGIC = /[*?[]/;

/** A glob's segment as a regular expression: * and ? within a name, […] as written. */
function segmentPattern(segment: string): RegExp {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[' && segment.indexOf(']', i + 2) > i) {
      const end = segment.indexOf(']', i + 2);
      out += `[${segment.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
      i = end;
    } else out += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

function entries(dir: string): { name: string; dir: boolean }[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((e) => ({ name: e.name, dir: e.isDirectory() }));
  } catch {
    return [];
  }
}

/** The files a glob matches, sorted; names starting with a dot only where the pattern's segment does. */
export function expandGlob(pattern: string, cwd: string): string[] {
  const segments = pattern.split('/');
  const first = segments.findIndex((s) => MAGIC.test(s));
  const prefix = segments.slice(0, first).join('/');
  const found: string[] = [];
  const under = (typed: string, name: string) => (typed === '' ? name : typed.endsWith('/') ? `${typed}${name}` : `${typed}/${name}`);
  const walk = (typed: string, index: number): void => {
    const segment = segments[index]!;
    const last = index === segments.length - 1;
    const dir = resolve(cwd, typed === '' ? '.' : typed);
    if (segment === '**') {
      if (!last) walk(typed, index + 1);
      for (const e of entries(dir)) if (e.dir && !e.name.startsWith('.')) walk(under(typed, e.name), index);
      return;
    }
    const match = MAGIC.test(segment) ? segmentPattern(segment) : undefined;
    for (const e of entries(dir)) {
      if (match ? !match.test(e.name) || (e.name.startsWith('.') && !segment.startsWith('.')) : e.name !== segment) continue;
      const path = under(typed, e.name);
      if (last ? !e.dir : e.dir) (last ? found.push(path) : walk(path, index + 1));
    }
  };
  walk(first === 0 ? '' : prefix || '/', first);
  return [...new Set(found)].sort();
}

/** The requests the arguments name, in order: a path as it is, a glob's matches (none: a usage error), - for stdin (once). */
export function requestSources(args: readonly string[], cwd: string): RequestSource[] {
  const sources: RequestSource[] = [];
  for (const arg of args) {
    if (arg === '-') {
      if (sources.some((s) => s.file === undefined)) throw new UsageError('- (stdin) is named twice: a request can be read from stdin once');
      sources.push({ label: 'stdin' });
      continue;
    }
    // A name that exists is that file, even with glob characters in it (`[draft].json`).
    const matches = MAGIC.test(arg) && !existsSync(resolve(cwd, arg)) ? expandGlob(arg, cwd) : [arg];
    if (!matches.length) throw new UsageError(`no request file matches ${arg}`);
    for (const match of matches) sources.push({ label: match, file: match });
  }
  return sources;
}

/** The file's text; a missing file is "not found: PATH" (with a hint), every other reason it cannot be read a usage error too. */
export function readRequestFile(path: string, typed: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`not found: ${typed}`, [], 'name the request file (a JSON body of POST /delivery/e-mail/validate), or - for stdin');
    if (code === 'EISDIR') throw new UsageError(`${typed} is a directory, not a request file`);
    throw new UsageError(`cannot read ${typed}: ${readFailure(error)}`);
  }
}

/**
 * A request's text as its body, or why it is not one: JSON syntax with its line and column, or not an object.
 * A UTF-8 byte order mark in front (Notepad, PowerShell) is no part of the JSON: read past, as a baseline and the config file are.
 */
export function parseRequest(read: string, label: string): ReadRequest {
  const text = read.startsWith('\uFEFF') ? read.slice(1) : read;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    const at = jsonSyntaxError(text);
    if (!at) return { problem: new UsageError(`${label} is not JSON: ${(error as Error).message}`) };
    return { problem: new UsageError(`${label} is not JSON: line ${at.line}, column ${at.column}: ${at.message}`), line: at.line, column: at.column };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { problem: new UsageError(`${label} must hold a JSON object (the request body)`) };
  return { body: body as Record<string, unknown>, lines: jsonLines(text) };
}
