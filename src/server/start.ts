import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { UsageError } from '../errors.js';
import { buildApp, type AppOptions } from './app.js';
import { rereadableVerifier, type AuthConfig, type Verifier } from './auth.js';
import type { ServerLimits } from './limits.js';
import { PluginFiles } from './plugin-files.js';
import { DatasetHolder, ServedDataset, type ServeOptions } from './plugins.js';

export { isPluginDirectory } from './plugin-files.js';

export interface ServerOptions extends ServeOptions {
  dir: string;
  host: string;
  port: number;
  auth: AuthConfig;
  log: (entry: Record<string, unknown>) => void;
  version: string;
  /** Body size, rate and query time limits; any left out take their defaults. */
  limits?: Partial<ServerLimits>;
  /** Compression of answers (default on); --no-compression turns it off. */
  compression?: boolean;
  /** The access log's lines of /healthz answered 200 (default on); --no-health-log leaves them out. */
  healthLog?: boolean;
  /** --cors-origin: the origins allowed to call from a browser (none by default). */
  corsOrigins?: readonly string[];
}

export interface RunningServer<H = DatasetHolder> {
  url: string;
  app: FastifyInstance;
  /** The data served: one dataset (DatasetHolder), or a directory of plugin files (PluginFiles). */
  holder: H;
  /** Reloads the dataset (a directory: lists it again); requests in flight finish on the old one. */
  reload(): Promise<void>;
  /** Stops accepting connections, waits for requests in flight, closes the dataset. */
  close(): Promise<void>;
}

/**
 * What a failed listen means to the person who started the server, as a usage error
 * (exit 2) naming the port or host; anything else is returned as it is.
 */
export function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return new UsageError(`port ${port} is already in use on ${host}`, [], 'stop what listens there, or choose another port with --port (--port 0: any free port)');
    case 'EACCES':
      return new UsageError(`no permission to listen on port ${port}`, [], 'ports below 1024 need privileges: choose another with --port, e.g. --port 8080');
    case 'EADDRNOTAVAIL':
      return new UsageError(`--host: ${host} is not an address of this machine`, [], 'use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)');
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new UsageError(`--host: cannot resolve "${host}" to an address`);
    default:
      return error;
  }
}

/**
 * Fails fast, before a dataset is loaded (which may take long), when the port cannot be
 * listened on: listens once on it and closes again. The real listen can still fail
 * (another process may take the port meanwhile): it reports the same way.
 */
export async function assertCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error) => reject(listenError(error, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Loads the dataset (attribution included), then listens. Fails before listening if either is wrong. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const verify = rereadableVerifier(options.auth);
  await assertCanListen(options.host, options.port);
  const holder = new DatasetHolder(await ServedDataset.load(options.dir, options), options);
  return listen(options, verify, holder, {
    dataset: () => holder.current,
    datasetOf: (dataVersion) => holder.byVersion(dataVersion),
    reloadFailedAt: () => holder.reloadFailedAt,
  });
}

/**
 * Serves a directory of plugin files (plugin-files.ts): listed now, each file opened on its
 * plugin's first request, at most maxOpenPlugins at once (and within maxPluginMemory bytes of DuckDB memory). Fails before listening if the
 * directory holds none.
 */
export async function startPluginFiles(options: ServerOptions & { maxOpenPlugins?: number; maxPluginMemory?: number }): Promise<RunningServer<PluginFiles>> {
  const verify = rereadableVerifier(options.auth);
  await assertCanListen(options.host, options.port);
  const files = new PluginFiles(options.dir, {
    ...options,
    ...(options.maxOpenPlugins !== undefined ? { maxOpen: options.maxOpenPlugins } : {}),
    ...(options.maxPluginMemory !== undefined ? { maxMemoryBytes: options.maxPluginMemory } : {}),
  });
  return listen(options, verify, files, { served: files });
}

/** Builds the app over the data and listens; a failed listen closes the data. */
async function listen<H extends { reload(): Promise<void>; close(): Promise<void> }>(
  options: ServerOptions,
  verify: { verify: Verifier; reread(): void },
  holder: H,
  data: Pick<AppOptions, 'dataset' | 'datasetOf' | 'served' | 'reloadFailedAt'>,
): Promise<RunningServer<H>> {
  const app = await buildApp({
    ...data,
    verify: verify.verify,
    log: options.log,
    version: options.version,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.compression !== undefined ? { compression: options.compression } : {}),
    ...(options.healthLog !== undefined ? { healthLog: options.healthLog } : {}),
    ...(options.corsOrigins ? { corsOrigins: options.corsOrigins } : {}),
  });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await holder.close();
    throw listenError(error, options.host, options.port);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    app,
    holder,
    // the key files first: one that cannot be read fails the reload, the keys and data before kept
    reload: async () => {
      verify.reread();
      await holder.reload();
    },
    close: async () => {
      // The drain first, with the listener and every connection still open: a request that arrives
      // meanwhile, on a new connection or an open keep-alive one, gets the 503 problem with
      // Connection: close, never a reset (Node's server.close() would destroy the idle ones at once).
      // Once the requests begun before are answered, close() ends the connections idle at that
      // moment; one busy then (a 503 being sent) ends as it falls idle.
      await app.drain();
      const idle = setInterval(() => app.server.closeIdleConnections(), 250);
      try {
        await app.close();
      } finally {
        clearInterval(idle);
      }
      await holder.close();
    },
  };
}
