/**
 * The configuration file ($XDG_CONFIG_HOME/convx/config.json, mode 0600 in a
 * 0700 directory) and how flags, environment and config combine:
 * flags beat environment beats config.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UsageError } from './errors.js';

export interface Profile {
  mode?: 'local' | 'api';
  data?: string;
  api?: string;
  deliveryApi?: string;
  token?: string;
  plugin?: string;
  format?: string;
}

export interface ConfigFile {
  defaultProfile?: string;
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';

/** $XDG_CONFIG_HOME/convx/config.json, else ~/.config/convx/config.json; undefined with neither variable. */
export function configPath(env: Record<string, string | undefined>): string | undefined {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, '.config') : undefined);
  return base ? join(base, 'convx', 'config.json') : undefined;
}

export function readConfig(path: string | undefined): ConfigFile {
  if (!path || !existsSync(path)) return { profiles: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON (${(error as Error).message}); fix it or remove it`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${path} should hold a JSON object`);
  }
  const file = parsed as Partial<ConfigFile>;
  return { ...(file.defaultProfile ? { defaultProfile: file.defaultProfile } : {}), profiles: file.profiles ?? {} };
}

/** Writes the file whole (temporary file, then rename), readable by its owner only. */
export function writeConfig(path: string, config: ConfigFile): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

export function profileName(flag: string | undefined, env: Record<string, string | undefined>, config: ConfigFile): string {
  return flag ?? env.CONVX_PROFILE ?? config.defaultProfile ?? DEFAULT_PROFILE;
}

export interface ResolvedSettings {
  mode: 'local' | 'api';
  data?: string;
  api?: string;
  deliveryApi?: string;
  plugin?: string;
  format?: string;
  /** Where the token comes from, resolved lazily (reading stdin or a file). */
  token?: string;
  profile: string;
}

export interface SettingSources {
  flags: { data?: string; api?: string; deliveryApi?: string; plugin?: string; format?: string; token?: string };
  env: Record<string, string | undefined>;
  profile: Profile;
  profileName: string;
}

/**
 * Flags beat environment beats config, level by level: the first level that
 * names a dataset or an API decides the mode, and naming both there is an error.
 */
export function resolveSettings({ flags, env, profile, profileName: name }: SettingSources): ResolvedSettings {
  const levels = [
    { label: 'flags', data: flags.data, api: flags.api, names: ['--data', '--api'] },
    { label: 'environment', data: env.CONVX_DATA, api: env.CONVX_API_URL, names: ['CONVX_DATA', 'CONVX_API_URL'] },
    {
      label: `profile "${name}"`,
      data: profile.mode === 'api' ? undefined : profile.data,
      api: profile.mode === 'local' ? undefined : profile.api,
      names: ['data', 'api'],
    },
  ];
  let mode: 'local' | 'api' = 'local';
  let data: string | undefined;
  let api: string | undefined;
  for (const level of levels) {
    if (level.data && level.api) {
      throw new UsageError(`${level.names[0]} and ${level.names[1]} both set (${level.label}): choose local mode or API mode`);
    }
    if (level.data || level.api) {
      mode = level.api ? 'api' : 'local';
      data = level.data;
      api = level.api;
      break;
    }
  }
  const pick = <T>(...values: (T | undefined)[]) => values.find((v) => v !== undefined && v !== '');
  const settings: ResolvedSettings = { mode, profile: name };
  if (data) settings.data = data;
  if (api) settings.api = api;
  const deliveryApi = pick(flags.deliveryApi, env.CONVX_DELIVERY_API_URL, profile.deliveryApi);
  if (deliveryApi) settings.deliveryApi = deliveryApi;
  const plugin = pick(flags.plugin, profile.plugin);
  if (plugin) settings.plugin = plugin;
  const format = pick(flags.format, profile.format);
  if (format) settings.format = format;
  const token = pick(flags.token, env.CONVX_TOKEN, profile.token);
  if (token) settings.token = token.trim();
  return settings;
}

/** Shows enough of a token to tell two apart, never the token. */
export function maskToken(token: string): string {
  if (token.length <= 12) return '****';
  return `****${token.slice(-4)} (${token.length} characters)`;
}
