/**
 * Where a command's backend comes from. `createContext()` takes a factory (its
 * type is the context's) and `ctx.openBackend(options)` calls it with the context: the one below
 * opens an ApiBackend in API mode and a LocalBackend (DuckDB) in local mode; a
 * test passes its own to `run()`/`createProgram()`. Both backends load here
 * lazily, so `convx --help` loads neither DuckDB nor undici.
 */
import type { Backend } from './backend.js';
import type { BackendFactory, Context, LookupsFactory, OpenBackendOptions } from './context.js';
import { threadsOption } from './config.js';
import { UsageError } from './errors.js';

/** The backend of the mode the settings name: the API (--api) or a local dataset (--data). */
export const openDefaultBackend: BackendFactory = (ctx, options) =>
  ctx.settings.mode === 'api' ? openApiBackend(ctx, options) : openDatasetBackend(ctx, options);

/** How long completion's look-ups may take before they print nothing: a TAB must not hang the shell. */
export const LOOKUP_BUDGET_MS = 2000;

/**
 * What shell completion looks values up in: in API mode the API, asked once (no retries) within
 * the look-ups' time budget, whatever --plugin or --reference-currency the line holds; in local
 * mode the dataset's files or imported file as they are (local/lookups.ts), every plugin's.
 */
export const openDefaultLookups: LookupsFactory = async (ctx) => {
  if (ctx.settings.mode === 'api') {
    const [{ ApiClient }, { ApiBackend }] = await Promise.all([import('./api/client.js'), import('./api/backend.js')]);
    const token = await ctx.token();
    const client = new ApiClient(ctx.settings.api!, { token, timeoutMs: LOOKUP_BUDGET_MS, retries: 0, refusedHint: ctx.tokenRefusedHint('reporting') });
    return new ApiBackend(client, { concurrency: 1, now: ctx.io.now, token });
  }
  // no dataset named: nothing to look up
  if (!ctx.settings.data) return { close: async () => undefined };
  const { openLookups } = await import('./local/lookups.js');
  return openLookups(ctx.resolvePath(ctx.settings.data), threadsOption(ctx));
};

async function openApiBackend({ globals, settings, log, io, token, tokenRefusedHint, timeoutSeconds }: Context, options: OpenBackendOptions): Promise<Backend> {
  if (globals.plugin !== undefined) {
    throw new UsageError('--plugin works in local mode only: in API mode the token names the plugin');
  }
  if (globals.referenceCurrency !== undefined) {
    throw new UsageError("--reference-currency works in local mode only: the API reports in the plugin's reference currency");
  }
  const [{ ApiClient }, { ApiBackend }] = await Promise.all([import('./api/client.js'), import('./api/backend.js')]);
  const clientOptions = {
    token: await token(),
    timeoutMs: timeoutSeconds * 1000,
    retries: 3,
    ...(io.sleep ? { sleep: io.sleep } : {}),
    onRetry: ({ attempt, delayMs, reason }: { attempt: number; delayMs: number; reason: string }) =>
      log.info(`retrying in ${(delayMs / 1000).toFixed(1)} s (${reason}; attempt ${attempt + 1})`),
  };
  const client = new ApiClient(settings.api!, { ...clientOptions, refusedHint: tokenRefusedHint('reporting') });
  return new ApiBackend(client, {
    concurrency: 4,
    ...(settings.deliveryApi ? { delivery: new ApiClient(settings.deliveryApi, { ...clientOptions, refusedHint: tokenRefusedHint('delivery') }) } : {}),
    ...(options.onPage ? { onPage: options.onPage } : {}),
    // A server without the look-up by order id is searched a year at a time, from today.
    now: io.now,
    info: (message: string) => log.info(message),
  });
}

async function openDatasetBackend({ globals, settings, dataDir }: Context, options: OpenBackendOptions): Promise<Backend> {
  // API-mode flags given on the command line would change nothing here: say so.
  const apiOnly = [
    ['--delivery-api', globals.deliveryApi],
    ['--token-file', globals.tokenFile],
    ['--timeout', globals.timeout],
  ]
    .filter(([, value]) => value !== undefined)
    .map(([flag]) => flag!);
  if (apiOnly.length) {
    throw new UsageError(
      `${apiOnly.length === 1 ? `${apiOnly[0]} works` : `${apiOnly.slice(0, -1).join(', ')} and ${apiOnly.at(-1)} work`} in API mode only, and this runs in local mode${settings.data ? ` on ${settings.data}` : ' (no --api names the reporting API)'}`,
      [],
      'for API mode pass --api URL (and not --data)',
    );
  }
  const { openLocalBackend } = await import('./local/open.js');
  return openLocalBackend(dataDir(), {
    // messages name the dataset as it was given (--data shop), not by the absolute path it is read by
    name: settings.data,
    ...(options.validation ? { require: ['contacts'] as const } : {}),
    ...(settings.plugin !== undefined ? { plugin: settings.plugin } : {}),
    ...(globals.referenceCurrency !== undefined ? { referenceCurrency: globals.referenceCurrency } : {}),
    ...threadsOption({ settings }),
  });
}
