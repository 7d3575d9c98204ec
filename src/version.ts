import { readFileSync } from 'node:fs';

/** convx's version, from package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
