import { decodeJwt } from 'jose';
import { checkApiUrl, credentialsPath, maskToken, redactUrl, replaceWrongSettings, tokenFromText, updateConfig, wrongSettings, type Profile, type Repair } from '../config.js';
import { readAll, type Context } from '../context.js';
import { ApiError, AuthError, ExitCode, UsageError } from '../errors.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { safeValue } from '../output/terminal.js';
import { checkTokenText } from '../model/token-text.js';
import { loadPrompts } from './prompts.js';

function requireConfigFile(ctx: Context): string {
  if (!ctx.configFile) throw new UsageError('cannot tell where the config file goes: set XDG_CONFIG_HOME or HOME');
  return ctx.configFile;
}

/**
 * Saves a profile: under the config's lock, the stored one as it is now updated and written
 * (updateConfig). It never becomes the default profile by itself: `convx config set defaultProfile`.
 * A wrong stored value the read left unused is written back as it was (config-file.ts, ConfigRead),
 * but for the keys of answers: the settings the change answers, which it writes as answered (init's).
 */
export function saveProfile(ctx: Context, name: string, update: (profile: Profile) => Profile, { repair, answers = [] }: { repair?: Repair; answers?: readonly string[] } = {}): string {
  const file = requireConfigFile(ctx);
  updateConfig(
    file,
    (config) => {
      replaceWrongSettings(config, name, answers);
      config.profiles[name] = update((Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined) ?? {});
    },
    undefined,
    repair,
  );
  return file;
}

interface TokenFacts {
  plugin?: string;
  expires?: string;
  expired?: boolean;
}

function tokenFacts(token: string, now: Date): TokenFacts {
  try {
    const claims = decodeJwt(token);
    const facts: TokenFacts = {};
    if (typeof claims.plugin === 'string') facts.plugin = claims.plugin;
    if (typeof claims.exp === 'number') {
      facts.expires = new Date(claims.exp * 1000).toISOString();
      facts.expired = claims.exp * 1000 < now.getTime();
    }
    return facts;
  } catch {
    return {};
  }
}

async function promptToken(ctx: Context): Promise<string> {
  if (!ctx.io.stdinIsTTY) {
    throw new UsageError('no terminal to type the token in: pipe it with `convx auth login --with-token < token.txt`');
  }
  const { password } = await loadPrompts();
  return password({ message: 'API token', mask: '*' }, { input: ctx.io.stdin, output: ctx.io.stderr });
}

export const authLogin = defineHandler<CommandFlags<'auth login'>>({
  async run(ctx, _args, flags) {
    const api = ctx.settings.api;
    if (!api) throw new UsageError('pass --api URL (the reporting base URL, e.g. https://host/v1), or set CONVX_API_URL');
    // Never stored with a password: the profile's own URL too (an older convx's, or written by hand).
    checkApiUrl(api, 'auth login: the API URL');
    checkApiUrl(ctx.settings.deliveryApi, 'auth login: the delivery API URL');
    // The URL first (before a prompt asks for the token), then the token: either wrong, nothing is stored.
    const check = flags.verify ? await import('../api/interface-check.js') : undefined;
    await check?.checkBase(api);
    const token = flags.withToken ? tokenFromText(await readAll(ctx.io.stdin), 'auth login --with-token') : (await promptToken(ctx)).trim();
    if (!token) throw new UsageError('the token is empty');
    // a token no header can carry is refused with or without --no-verify: stored, it could never be sent
    checkTokenText(token, 'auth login');
    await check?.checkToken(api, token);
    const deliveryApi = ctx.settings.deliveryApi;
    const file = saveProfile(ctx, ctx.settings.profile, (profile) => ({
      ...profile,
      mode: 'api',
      api,
      ...(deliveryApi ? { deliveryApi } : {}),
      token,
    }));
    const facts = tokenFacts(token, ctx.io.now());
    ctx.log.info(
      `logged in to ${api} as profile "${ctx.settings.profile}"${facts.plugin ? `, plugin ${facts.plugin}` : ''}${facts.expires ? `, token expires ${facts.expires}` : ''} (saved in ${file}, the token in ${credentialsPath(file)})`,
    );
  },
});

export const authStatus = defineHandler<Record<string, never>>({
  async run(ctx) {
    const { settings } = ctx;
    const status: Record<string, unknown> = { profile: settings.profile, mode: settings.mode };
    if (settings.mode === 'local') {
      status.data = settings.data ?? null;
      await print(ctx, status);
      return ExitCode.ok;
    }
    status.api = settings.api === undefined ? undefined : redactUrl(settings.api);
    let token: string | undefined;
    try {
      token = await ctx.token();
    } catch (error) {
      if (!(error instanceof AuthError)) throw error;
    }
    if (!token) {
      status.token = null;
      status.accepted = false;
      await print(ctx, status);
      return ExitCode.auth;
    }
    const facts = tokenFacts(token, ctx.io.now());
    status.token = maskToken(token);
    status.plugin = facts.plugin ?? null;
    status.expires = facts.expires ?? null;
    if (facts.expired) status.expired = true;
    const { probe } = await import('../api/interface-check.js');
    const result = await probe(settings.api!, token);
    // a server not reached (or failing) tells nothing of the token: unknown (null), not refused
    status.accepted = result === 'accepted' ? true : result instanceof ApiError ? null : false;
    if (result !== 'accepted') status.problem = result.message;
    await print(ctx, status);
    if (result === 'accepted') return ExitCode.ok;
    return result instanceof AuthError ? ExitCode.auth : result instanceof ApiError ? ExitCode.network : result.exitCode;
  },
});

async function print(ctx: Context, status: Record<string, unknown>): Promise<void> {
  if (ctx.format === 'json' || ctx.format === 'jsonl') return ctx.output.json(status);
  const width = Math.max(...Object.keys(status).map((k) => k.length));
  const lines = Object.entries(status).map(([k, v]) => {
    // the token's claims and the server's message are not ours: shown safe for a terminal (output/terminal.ts)
    const text = v === null ? '-' : safeValue(String(v));
    const shown = k === 'accepted' ? (v === null ? ctx.chalk.yellow('unknown (no answer from the API)') : v ? ctx.chalk.green('yes') : ctx.chalk.red('no')) : text;
    return `${ctx.chalk.dim(k.padEnd(width))}  ${shown}`;
  });
  await ctx.output.text(`${lines.join('\n')}\n`);
}

export const authLogout = defineHandler<Record<string, never>>({
  async run(ctx) {
    const name = ctx.settings.profile;
    const profile = ctx.config.profiles[name];
    // a stored token that no header could carry (empty, or no text), which the read left unused: removed as well
    const unusable = wrongSettings(ctx.config, name).some((w) => w.key === 'token');
    if (!profile?.token && !unusable) {
      ctx.log.info(`profile "${name}" has no stored token`);
      return;
    }
    saveProfile(ctx, name, ({ token: _dropped, ...rest }) => rest, { answers: ['token'] });
    ctx.log.info(`removed the ${profile?.token ? '' : 'unusable '}token of profile "${name}"`);
    if (ctx.io.env.CONVX_TOKEN) ctx.log.warn('CONVX_TOKEN is still set in the environment');
  },
});
