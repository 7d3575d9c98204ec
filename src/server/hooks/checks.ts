/** What a request must be before anything reads it: a Host (HTTP/1.1), a URL of bounded length, no credentials in its query. */
import type { FastifyInstance } from 'fastify';
import { credentialParameters } from '../accesslog.js';
import { MAX_URL_LENGTH } from '../limits.js';
import { problem, ProblemError } from '../problem.js';

export function registerRequestChecks(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      throw new ProblemError(problem('badRequest', 'an HTTP/1.1 request needs a Host header'));
    }
    if (request.url.length > MAX_URL_LENGTH) {
      throw new ProblemError(problem('uriTooLong', `the URL is ${request.url.length} characters long; at most ${MAX_URL_LENGTH} are answered`));
    }
    const credentials = credentialParameters(request.url);
    if (credentials.length) {
      throw new ProblemError(
        problem(
          'credentialsInQuery',
          `tokens are accepted only in the Authorization: Bearer header, never in the query string (found ${credentials.join(', ')}); ` +
            'the request was not authenticated, and a token sent this way may have been recorded by proxies: replace it',
        ),
      );
    }
  });
}
