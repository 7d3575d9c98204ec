import { existsSync } from 'node:fs';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import type { ServerLimits } from '../server/limits.js';
import type { PluginFiles } from '../server/plugin-files.js';
import type { DatasetHolder } from '../server/plugins.js';
import type { RunningServer, ServerOptions } from '../server/start.js';
import { normalizeOrigin } from '../server/conventions.js';
import { renderLimitsFromFlags, type RenderLimitFlags, type RenderLimits } from '../validation/limits.js';
import { packageVersion } from '../version.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';

/** Its flags (OPTIONS of options.ts), and the render limits, whose flags validation/limits.ts defines. */
type ServeFlags = CommandFlags<'serve'> & RenderLimitFlags;

const UNIT_BYTES: Record<string, number> = { '': 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2 };

/** A size flag's bytes (decimal digits and a unit of units), NaN when it is not one. */
function sizeBytes(value: string, units: Record<string, number>): number {
  const size = /^(\d+)\s*([a-z]*)$/i.exec(value.trim());
  const unit = size ? units[size[2]!.toLowerCase()] : undefined;
  return size && unit !== undefined ? Number(size[1]) * unit : NaN;
}

/** The limit flags as ServerLimits, each checked (decimal digits only). */
function parseLimits(flags: ServeFlags): ServerLimits {
  const bodyLimit = sizeBytes(flags.bodyLimit, UNIT_BYTES);
  if (!(bodyLimit > 0)) {
    throw new UsageError(`--body-limit: "${flags.bodyLimit}" is not a size such as 1048576, 512k or 2m (bytes, KiB, MiB)`);
  }
  if (!/^\d+$/.test(flags.rateLimit)) {
    throw new UsageError(`--rate-limit: "${flags.rateLimit}" is not a whole number of requests per minute (0: no limit)`);
  }
  if (!/^\d+(\.\d+)?$/.test(flags.queryTimeout)) {
    throw new UsageError(`--query-timeout: "${flags.queryTimeout}" is not a number of seconds (0: no limit)`);
  }
  return {
    bodyLimit,
    rateLimitPerMinute: Number(flags.rateLimit),
    queryTimeoutMs: Number(flags.queryTimeout) * 1000,
    ...parseTurnLimits(flags),
  };
}

/** --body-timeout, --send-timeout and the bounds of what one plugin or token runs at once (left out: derived from the pool's size). */
function parseTurnLimits(flags: ServeFlags): Pick<ServerLimits, 'bodyTimeoutMs' | 'sendTimeoutMs' | 'pluginConcurrency' | 'tokenConcurrency' | 'pluginQueue' | 'maxConnections'> {
  for (const [flag, value] of [['--body-timeout', flags.bodyTimeout], ['--send-timeout', flags.sendTimeout]] as const) {
    if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`${flag}: "${value}" is not a number of seconds (0: no limit)`);
  }
  const count = (value: string | undefined, flag: string) => {
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100_000) throw new UsageError(`${flag}: "${value}" is not a whole number from 1 to 100000`);
    return Number(value);
  };
  const pluginConcurrency = count(flags.pluginConcurrency, '--plugin-concurrency');
  const tokenConcurrency = count(flags.tokenConcurrency, '--token-concurrency');
  const pluginQueue = count(flags.pluginQueue, '--plugin-queue');
  if (!/^\d+$/.test(flags.maxConnections) || Number(flags.maxConnections) > 1_000_000) {
    throw new UsageError(`--max-connections: "${flags.maxConnections}" is not a whole number up to 1000000 (0: no limit)`);
  }
  return {
    bodyTimeoutMs: Math.round(Number(flags.bodyTimeout) * 1000),
    sendTimeoutMs: Math.round(Number(flags.sendTimeout) * 1000),
    maxConnections: Number(flags.maxConnections),
    ...(pluginConcurrency !== undefined ? { pluginConcurrency } : {}),
    ...(tokenConcurrency !== undefined ? { tokenConcurrency } : {}),
    ...(pluginQueue !== undefined ? { pluginQueue } : {}),
  };
}

/** --pool-size as a number, undefined when not given (four per core). */
function parsePoolSize(flags: ServeFlags): number | undefined {
  if (flags.poolSize === undefined) return undefined;
  if (!/^\d+$/.test(flags.poolSize) || Number(flags.poolSize) < 1 || Number(flags.poolSize) > 256) {
    throw new UsageError(`--pool-size: "${flags.poolSize}" is not a number of connections from 1 to 256`);
  }
  return Number(flags.poolSize);
}

/** --cors-origin as origins, each checked (scheme://host[:port]); none when not given. */
function parseCorsOrigins(flags: ServeFlags): string[] | undefined {
  if (flags.corsOrigin === undefined) return undefined;
  return flags.corsOrigin.split(',').map((text) => {
    const origin = normalizeOrigin(text);
    if (origin === undefined) {
      throw new UsageError(`--cors-origin: "${text.trim()}" is not an origin such as https://app.example.com or http://localhost:3000 (scheme, host, port; no path)`);
    }
    return origin;
  });
}

/** --max-open-plugins as a number, undefined when not given (DEFAULT_MAX_OPEN_PLUGINS). */
function parseMaxOpenPlugins(flags: ServeFlags): number | undefined {
  if (flags.maxOpenPlugins === undefined) return undefined;
  if (!/^\d+$/.test(flags.maxOpenPlugins) || Number(flags.maxOpenPlugins) < 1 || Number(flags.maxOpenPlugins) > 100_000) {
    throw new UsageError(`--max-open-plugins: "${flags.maxOpenPlugins}" is not a whole number from 1 to 100000`);
  }
  return Number(flags.maxOpenPlugins);
}

const MEMORY_UNITS: Record<string, number> = { ...UNIT_BYTES, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** --max-plugin-memory in bytes, undefined when not given (no bound). */
function parseMaxPluginMemory(flags: ServeFlags): number | undefined {
  if (flags.maxPluginMemory === undefined) return undefined;
  const bytes = sizeBytes(flags.maxPluginMemory, MEMORY_UNITS);
  if (!(bytes >= 1024 ** 2) || bytes > 2 ** 50) {
    throw new UsageError(`--max-plugin-memory: "${flags.maxPluginMemory}" is not a size from 1m to 1048576g such as 512m or 4g (bytes, KiB, MiB, GiB)`);
  }
  return bytes;
}

/** --version-grace as seconds (decimal digits only; 0: keep no replaced version). */
function parseVersionGrace(flags: ServeFlags): number {
  if (!/^\d+$/.test(flags.versionGrace) || Number(flags.versionGrace) > 86_400) {
    throw new UsageError(`--version-grace: "${flags.versionGrace}" is not a whole number of seconds from 0 to 86400`);
  }
  return Number(flags.versionGrace);
}

/**
 * The files the server is started with, each there before anything is loaded: a missing
 * one is "not found: PATH" (exit 2), as typed, with the flag that named it in the hint
 * (a missing --data is ctx.dataDir()'s).
 */
function assertFilesExist(ctx: Context, flags: ServeFlags): void {
  const given: [string | undefined, string][] = [
    [flags.jwtPublicKey, '--jwt-public-key names a PEM public key file'],
    [flags.jwks, '--jwks names a JSON Web Key Set file'],
  ];
  for (const [path, what] of given) {
    if (path !== undefined && !existsSync(ctx.resolvePath(path))) throw new UsageError(`not found: ${path}`, [], what);
  }
}

type Log = (entry: Record<string, unknown>) => void;

/** What startServer takes from the flags, each checked in this order (the first bad one is reported) before anything loads. */
function serverOptions(ctx: Context, flags: ServeFlags, log: Log): ServerOptions & { limits: ServerLimits; renderLimits: RenderLimits; maxOpenPlugins?: number; maxPluginMemory?: number } {
  if (!/^\d+$/.test(flags.port) || Number(flags.port) > 65535) {
    throw new UsageError(`--port: "${flags.port}" is not a port number (0 to 65535)`);
  }
  const limits = parseLimits(flags);
  const poolSize = parsePoolSize(flags);
  const corsOrigins = parseCorsOrigins(flags);
  const versionGraceSeconds = parseVersionGrace(flags);
  const maxOpenPlugins = parseMaxOpenPlugins(flags);
  const maxPluginMemory = parseMaxPluginMemory(flags);
  const renderLimits = renderLimitsFromFlags(flags);
  const dir = ctx.dataDir({ localOnly: true });
  assertFilesExist(ctx, flags);
  const secret = jwtSecret(ctx.io.env);
  return {
    dir,
    name: ctx.settings.data,
    host: flags.host,
    port: Number(flags.port),
    auth: {
      ...(secret !== undefined ? { secret } : {}),
      ...(flags.jwtPublicKey ? { publicKeyFile: ctx.resolvePath(flags.jwtPublicKey) } : {}),
      ...(flags.jwks ? { jwksFile: ctx.resolvePath(flags.jwks) } : {}),
      ...(flags.jwtIssuer !== undefined ? { issuer: flags.jwtIssuer } : {}),
      ...(flags.jwtAudience !== undefined ? { audience: flags.jwtAudience } : {}),
      ...(flags.allowTokensWithoutExp ? { allowNoExpiry: true } : {}),
    },
    ...(ctx.globals.referenceCurrency ? { referenceCurrency: ctx.globals.referenceCurrency } : {}),
    log,
    version: packageVersion(),
    limits,
    renderLimits,
    ...(poolSize !== undefined ? { poolSize } : {}),
    compression: flags.compression,
    healthLog: flags.healthLog,
    ...(flags.sharedTables ? { sharedTables: true } : {}),
    ...(corsOrigins ? { corsOrigins } : {}),
    versionGraceSeconds,
    ...(maxOpenPlugins !== undefined ? { maxOpenPlugins } : {}),
    ...(maxPluginMemory !== undefined ? { maxPluginMemory } : {}),
  };
}

/** --max-open-plugins and --max-plugin-memory bound a directory of plugin files: given for a dataset, they would bound nothing. */
function assertNoPluginFileBounds(flags: ServeFlags, dir: string): void {
  const given = [flags.maxOpenPlugins !== undefined && '--max-open-plugins', flags.maxPluginMemory !== undefined && '--max-plugin-memory'].filter((f) => f !== false);
  if (given.length === 0) return;
  throw new UsageError(
    `${given.join(' and ')} bound${given.length === 1 ? 's' : ''} a directory of plugin files, and ${dir} is a dataset`,
    [],
    'a directory of plugin files is written by: convx data import DIR --split-plugins --into PLUGINS/ (then convx serve --data PLUGINS/)',
  );
}

/** The server: one dataset, or a directory of plugin files. */
type Server = RunningServer<DatasetHolder | PluginFiles>;

/** The listening line (and a note when only delivery validation is served). */
function logListening(log: Log, server: Server, began: number): void {
  const { reports, ...summary } = server.holder.summary();
  // its process id: what a reload (kill -HUP) or a stop is sent to
  log({ time: new Date().toISOString(), msg: 'listening', url: server.url, pid: process.pid, ...summary, startupMs: Date.now() - began });
  if (!reports) {
    log({
      time: new Date().toISOString(),
      msg: 'the dataset holds no orders: serving delivery validation only; the report routes answer 404 (urn:convx:problem:no-orders)',
    });
  }
}

/**
 * SIGTERM or SIGINT: the requests in flight drained, then the exit code (0; 1 when the drain
 * failed or ran over limitMs).
 */
function stop(server: Server, log: Log, signal: string, limitMs: number): Promise<number> {
  return new Promise<number>((resolve) => {
    const inFlight = server.app.requestsInFlight;
    log({ time: new Date().toISOString(), msg: 'shutting down: draining requests in flight', signal, inFlight });
    // The drain is bounded: every request has a time budget, so waiting longer than the
    // longest budget plus a margin means something is stuck; then stop anyway (exit 1).
    const timer = setTimeout(() => {
      log({
        time: new Date().toISOString(),
        msg: 'drain timed out: stopping with requests still in flight',
        afterMs: limitMs,
        inFlight: server.app.requestsInFlight,
      });
      // The drain keeps the listener open until the requests in flight are answered: close it too.
      server.app.server.close();
      server.app.server.closeAllConnections();
      resolve(1);
    }, limitMs);
    server.close().then(() => {
      clearTimeout(timer);
      log({ time: new Date().toISOString(), msg: 'drained and stopped', drained: inFlight });
      resolve(0);
    }, (error: unknown) => {
      clearTimeout(timer);
      log({ time: new Date().toISOString(), msg: 'shutdown failed', error: String(error) });
      resolve(1);
    });
  });
}

/** SIGHUP: the dataset loaded again; a failure keeps the data loaded before. */
function reload(server: Server, log: Log): void {
  if (server.holder.busy) {
    log({ time: new Date().toISOString(), msg: 'reload requested during a reload: one more runs after it' });
  } else log({ time: new Date().toISOString(), msg: 'reloading' });
  const t = Date.now();
  server.reload().then(
    () => {
      const { plugins, dataVersion } = server.holder.summary();
      log({ time: new Date().toISOString(), msg: 'reloaded', ms: Date.now() - t, generation: server.holder.generation, plugins, dataVersion });
    },
    (error: unknown) =>
      log({
        time: new Date().toISOString(),
        msg: 'reload failed; still serving the data loaded before',
        error: error instanceof Error ? error.message : String(error),
      }),
  );
}

export default defineHandler<ServeFlags>({
  async run(ctx, _args, flags) {
    const log: Log = (entry) => ctx.io.stderr.write(`${JSON.stringify(entry)}\n`);
    const options = serverOptions(ctx, flags, log);
    const { isPluginDirectory, startPluginFiles, startServer } = await import('../server/start.js');
    const began = Date.now();
    const pluginFiles = isPluginDirectory(options.dir, options.name);
    if (!pluginFiles) assertNoPluginFileBounds(flags, options.name ?? options.dir);
    // one dataset's order indexes are read right after its load; a plugin file's on its first look-up
    const server: Server = pluginFiles ? await startPluginFiles(options) : await startServer({ ...options, orderIndex: 'eager' });
    logListening(log, server, began);
    warnShortSecret(log, options.auth.secret);
    const limitMs = drainLimitMs(options.limits.queryTimeoutMs, options.renderLimits.requestTimeMs);
    return new Promise<number>((resolve) => {
      const unsubscribe: (() => void)[] = [];
      const onStop = (signal: string) => {
        unsubscribe.forEach((u) => u());
        void stop(server, log, signal, limitMs).then(resolve);
      };
      unsubscribe.push(ctx.io.onSignal('SIGTERM', () => onStop('SIGTERM')));
      unsubscribe.push(ctx.io.onSignal('SIGINT', () => onStop('SIGINT')));
      unsubscribe.push(ctx.io.onSignal('SIGHUP', () => reload(server, log)));
    });
  },
});

/**
 * CONVX_JWT_SECRET, undefined when unset or empty; a secret of white space alone is refused (exit 2,
 * never echoed): anyone could guess it and sign tokens for any plugin.
 */
function jwtSecret(env: Record<string, string | undefined>): string | undefined {
  const secret = env.CONVX_JWT_SECRET;
  if (!secret) return undefined;
  if (!secret.trim()) {
    throw new UsageError(
      `CONVX_JWT_SECRET is blank (${Buffer.byteLength(secret)} bytes of white space alone): it would sign and verify tokens anyone can make`,
      [],
      `set it to a random secret of at least ${MIN_SECRET_BYTES} bytes, e.g. export CONVX_JWT_SECRET="$(openssl rand -base64 32)", or unset it and pass --jwt-public-key FILE or --jwks FILE`,
    );
  }
  return secret;
}

/** The shortest HS256 secret that is not a warning: RFC 7518 asks for a key at least as long as the hash, 32 bytes. */
export const MIN_SECRET_BYTES = 32;

/**
 * A warning on the log for a short CONVX_JWT_SECRET (never its value): one token is enough to guess a
 * short secret offline, and with it to sign tokens for any plugin. Not refused: a development
 * secret such as dev-secret is what the examples use.
 */
function warnShortSecret(log: Log, secret: string | undefined): void {
  const bytes = secret === undefined ? 0 : Buffer.byteLength(secret);
  if (secret === undefined || bytes >= MIN_SECRET_BYTES) return;
  log({
    time: new Date().toISOString(),
    msg: `warning: CONVX_JWT_SECRET is ${bytes} bytes; HS256 wants at least ${MIN_SECRET_BYTES} (a short secret can be guessed from one token, and any plugin's token signed with it): for development only`,
  });
}

/** How long a shutdown waits for requests in flight: the longest request budget, and a margin. */
export function drainLimitMs(queryTimeoutMs: number, validationMs: number): number {
  return Math.max(queryTimeoutMs || 30_000, validationMs || 0) + 10_000;
}
