/**
 * What a bearer token must be to travel as the value of an Authorization header: printable ASCII
 * without spaces (a JWT is). Anything else (a character outside ASCII such as €, a control
 * character, a space inside) would fail in the HTTP client as if the API could not be reached,
 * so it is refused first, as a usage error that names what is wrong and never the token.
 */
import { UsageError } from '../errors.js';

/** Why the token cannot be a header value ("a character outside ASCII (character 4)"), else undefined; never a part of it. */
export function tokenProblem(token: string): string | undefined {
  let position = 0;
  for (const char of token) {
    position++;
    const code = char.codePointAt(0)!;
    if (code > 0x7e && code !== 0x7f) return `a character outside ASCII (character ${position})`;
    if (code === 0x20) return `a space (character ${position})`;
    if (code < 0x20 || code === 0x7f) return `a control character (character ${position})`;
  }
  return undefined;
}

/** Refuses a token no HTTP header can carry: a UsageError (exit 2) naming its source, its content not shown. */
export function checkTokenText(token: string, source: string): void {
  const problem = tokenProblem(token);
  if (problem === undefined) return;
  throw new UsageError(
    `${source}: the token holds ${problem}, which an HTTP header cannot carry (its content is not shown)`,
    [],
    'a token is printable ASCII without spaces, as a JWT is: copy it again from where it was issued',
  );
}
