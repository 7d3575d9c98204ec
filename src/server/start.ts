import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { createVerifier, type AuthConfig } from './auth.js';
import type { ServerLimits } from './limits.js';
import { DatasetHolder, ServedDataset, type ServeOptions } from './tenants.js';

export interface ServerOptions extends ServeOptions {
  dir: string;
  host: string;
  port: number;
  auth: AuthConfig;
  log: (entry: Record<string, unknown>) => void;
  version: string;
  /** Body size, rate and query time limits; any left out take their defaults. */
  limits?: Partial<ServerLimits>;
}

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  holder: DatasetHolder;
  /** Reloads the dataset; requests in flight finish on the old one. */
  reload(): Promise<void>;
  /** Stops accepting connections, waits for requests in flight, closes the dataset. */
  close(): Promise<void>;
}

/** Loads the dataset (attribution included), then listens. Fails before listening if either is wrong. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const verify = createVerifier(options.auth);
  const holder = new DatasetHolder(await ServedDataset.load(options.dir, options), options);
  const app = await buildApp({
    dataset: () => holder.current,
    verify,
    log: options.log,
    version: options.version,
    ...(options.limits ? { limits: options.limits } : {}),
  });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await holder.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    app,
    holder,
    reload: () => holder.reload(),
    close: async () => {
      await app.close();
      await holder.close();
    },
  };
}
