/**
 * What `convx init` and `convx auth login` check before they store an API profile (`--no-verify`
 * skips it): the URL is a reporting base of the interface (it ends in the version prefix,
 * `/healthz` beside that prefix answers as convx serve's does, the prefix serves the interface's
 * operations), and the API accepts the token. A
 * failure is an error that says what to fix; nothing is stored. `convx auth status` asks the same
 * question of the token (`probe`).
 */
import { Agent, request } from 'undici';
import { redactUrl } from '../config.js';
import { ApiError, AuthError, ConvxError, UsageError } from '../errors.js';
import { ApiClient, describeFailure } from './client.js';

/** The version prefix of the reporting interface: a base URL ends in it (https://host/v1). */
export const VERSION_PREFIX = '/v1';

/** How long each check may take. */
export const CHECK_TIMEOUT_MS = 15_000;

const SKIP = '--no-verify stores it without checking';

/** The URL with the version prefix in place of what it ends in (http://host:8080 → http://host:8080/v1); undefined when it has it. */
export function withVersionPrefix(api: string): string | undefined {
  const url = new URL(api);
  const path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith(VERSION_PREFIX)) return undefined;
  url.pathname = `${path.replace(/\/v\d+$/, '')}${VERSION_PREFIX}`;
  return url.toString();
}

/** GET of a URL without credentials: the status and body, or why no answer came. */
async function get(url: string, timeoutMs: number): Promise<{ status: number; body: string } | { failure: string }> {
  const agent = new Agent({ connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const response = await request(url, { dispatcher: agent, headers: { accept: 'application/json', 'user-agent': 'convx' } });
    return { status: response.statusCode, body: await response.body.text() };
  } catch (error) {
    return { failure: describeFailure(error) };
  } finally {
    await agent.close();
  }
}

const isHealthy = (body: string): boolean => {
  try {
    return (JSON.parse(body) as { status?: unknown }).status === 'ok';
  } catch {
    return false;
  }
};

/**
 * A GET of a URL of the API; `wrong` says what is wrong with its answer (undefined: nothing). Throws
 * the error that says the API is not reachable, or does not answer the reporting interface.
 */
async function ask(api: string, url: string, timeoutMs: number, wrong: (answer: { status: number; body: string }) => string | undefined): Promise<void> {
  const answer = await get(url, timeoutMs);
  if ('failure' in answer) {
    throw new ApiError(`cannot reach the API at ${redactUrl(api)}: ${answer.failure} (GET ${url})`, `check the URL and that the service is up; ${SKIP}`);
  }
  const what = wrong(answer);
  if (what) {
    throw new ApiError(
      `${redactUrl(api)} does not answer the reporting interface: GET ${url} answered ${what}`,
      `give the reporting base URL of a convx API, e.g. https://host/v1 (convx serve: http://HOST:PORT/v1); ${SKIP}`,
    );
  }
}

/**
 * Checks that the reporting base URL answers the interface: it ends in the version prefix (else a
 * usage error that names the URL meant: "did you mean http://host:8080/v1?"), the service is
 * reachable, `/healthz` beside the prefix answers `{"status":"ok"}`, and the prefix serves the
 * interface's operations (`/v1/conversions` is there: asked without a token, anything but a 404).
 * Throws what is wrong.
 */
export async function checkBase(api: string, timeoutMs = CHECK_TIMEOUT_MS): Promise<void> {
  // the client refuses what is no http(s) URL, or holds credentials, in the words API mode uses
  await new ApiClient(api, { token: '', timeoutMs, retries: 0 }).close();
  const meant = withVersionPrefix(api);
  if (meant) {
    throw new UsageError(`${redactUrl(api)} is not a reporting base URL: it lacks the version prefix ${VERSION_PREFIX}; did you mean ${redactUrl(meant)}?`);
  }
  const base = new URL(api);
  const path = base.pathname.replace(/\/+$/, '');
  await ask(api, `${base.origin}${path.slice(0, -VERSION_PREFIX.length)}/healthz`, timeoutMs, ({ status, body }) =>
    status !== 200 ? `with HTTP ${status}` : isHealthy(body) ? undefined : 'without {"status":"ok"}',
  );
  await ask(api, `${base.origin}${path}/conversions`, timeoutMs, ({ status }) => (status === 404 ? 'with HTTP 404' : undefined));
}

/** Asks the API for one row with the token: 'accepted', or the error that says why not. */
export async function probe(api: string, token: string, timeoutMs = CHECK_TIMEOUT_MS): Promise<'accepted' | ConvxError> {
  const client = new ApiClient(api, { token, timeoutMs, retries: 0 });
  try {
    await client.getJson('conversions', { limit: '1' });
    return 'accepted';
  } catch (error) {
    if (error instanceof ConvxError) return error;
    throw error;
  } finally {
    await client.close();
  }
}

/**
 * Checks that the API accepts the token: a refusal (401, 403) is an AuthError (exit 4), an API
 * that cannot be asked an ApiError (exit 5), both "not stored: …". An answer about the data (no
 * orders, a bad request, a data error) came after the token was accepted: it passes.
 */
export async function checkToken(api: string, token: string, timeoutMs = CHECK_TIMEOUT_MS): Promise<void> {
  const result = await probe(api, token, timeoutMs);
  // Nothing was stored, so the usual hint (`convx auth status`, log in again) would point at another token or at what just failed.
  if (result instanceof AuthError) {
    throw new AuthError(
      `not stored: ${result.message}`,
      "give a token this API accepts: one it signed, or for a development server one that `convx token` made with the server's CONVX_JWT_SECRET, for a plugin it holds",
    );
  }
  if (result instanceof ApiError) throw new ApiError(`not stored: could not check the token: ${result.message}`, `${result.hint ? `${result.hint}; ` : ''}${SKIP}`);
}
