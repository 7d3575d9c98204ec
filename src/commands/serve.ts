import { UsageError } from '../errors.js';
import { packageVersion } from '../version.js';
import { defineCommand } from './registry.js';

interface ServeFlags {
  host: string;
  port: string;
  jwtPublicKey?: string;
  jwks?: string;
}

export default defineCommand<ServeFlags>({
  name: 'serve',
  summary: 'serve the reporting interface over HTTP from a local dataset',
  options: [
    { flags: '--host <host>', description: 'address to listen on', defaultValue: '127.0.0.1' },
    { flags: '--port <port>', description: 'port to listen on (0: any free port)', defaultValue: '8080' },
    { flags: '--jwt-public-key <file>', description: 'verify RS256/ES256 tokens with this PEM public key' },
    { flags: '--jwks <file>', description: 'verify RS256/ES256 tokens with this JSON Web Key Set' },
  ],
  examples: [
    'CONVX_JWT_SECRET=dev-secret convx serve --data samples/shop',
    'convx serve --data exports/ --port 9000 --jwks keys.json',
    'curl -H "Authorization: Bearer $(CONVX_JWT_SECRET=dev-secret convx token --plugin shop)" \\\n    "http://127.0.0.1:8080/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31"',
  ],
  async run(ctx, _args, flags) {
    if (!/^\d+$/.test(flags.port) || Number(flags.port) > 65535) {
      throw new UsageError(`--port: "${flags.port}" is not a port number (0 to 65535)`);
    }
    const { startServer } = await import('../server/start.js');
    const log = (entry: Record<string, unknown>) => ctx.io.stderr.write(`${JSON.stringify(entry)}\n`);
    const began = Date.now();
    const server = await startServer({
      dir: ctx.dataDir(),
      host: flags.host,
      port: Number(flags.port),
      auth: {
        ...(ctx.io.env.CONVX_JWT_SECRET ? { secret: ctx.io.env.CONVX_JWT_SECRET } : {}),
        ...(flags.jwtPublicKey ? { publicKeyFile: ctx.resolvePath(flags.jwtPublicKey) } : {}),
        ...(flags.jwks ? { jwksFile: ctx.resolvePath(flags.jwks) } : {}),
      },
      ...(ctx.globals.referenceCurrency ? { referenceCurrency: ctx.globals.referenceCurrency } : {}),
      log,
      version: packageVersion(),
    });
    log({
      time: new Date().toISOString(),
      msg: 'listening',
      url: server.url,
      plugins: server.holder.current.plugins,
      startupMs: Date.now() - began,
    });

    await new Promise<void>((resolve) => {
      const unsubscribe: (() => void)[] = [];
      const stop = (signal: string) => {
        unsubscribe.forEach((u) => u());
        log({ time: new Date().toISOString(), msg: 'shutting down', signal });
        server.close().then(resolve, (error: unknown) => {
          log({ time: new Date().toISOString(), msg: 'shutdown failed', error: String(error) });
          resolve();
        });
      };
      const reload = () => {
        log({ time: new Date().toISOString(), msg: 'reloading' });
        const t = Date.now();
        server.reload().then(
          () => log({ time: new Date().toISOString(), msg: 'reloaded', ms: Date.now() - t, plugins: server.holder.current.plugins }),
          (error: unknown) =>
            log({
              time: new Date().toISOString(),
              msg: 'reload failed; still serving the data loaded before',
              error: error instanceof Error ? error.message : String(error),
            }),
        );
      };
      unsubscribe.push(ctx.io.onSignal('SIGTERM', () => stop('SIGTERM')));
      unsubscribe.push(ctx.io.onSignal('SIGINT', () => stop('SIGINT')));
      unsubscribe.push(ctx.io.onSignal('SIGHUP', reload));
    });
  },
});
