/**
 * The configuration file ($XDG_CONFIG_HOME/convx/config.json, mode 0600 in a
 * 0700 directory), the credentials file beside it (credentials.json, mode 0600:
 * the only place a token is written) and how flags, environment and config
 * combine: flags beat environment beats config.
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
  /** The default time zone of the reporting commands' periods (--tz). */
  tz?: string;
  /** Tracking lint of convx validate: the shop's own domains and the parameters their links carry (comma-separated). */
  trackingDomains?: string;
  trackingParams?: string;
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

/** credentials.json beside the config file: the profiles' tokens, and nothing else. */
export function credentialsPath(configFile: string): string {
  return join(dirname(configFile), 'credentials.json');
}

/** The settings a profile may hold, as `convx config` names them; the token is not one of them. */
export const PROFILE_KEYS = ['mode', 'data', 'api', 'deliveryApi', 'plugin', 'format', 'tz', 'trackingDomains', 'trackingParams'] as const;
/** The settings `convx config get|set|unset` take: a profile's, and which profile is the default. */
export const CONFIG_KEYS = [...PROFILE_KEYS, 'defaultProfile'] as const;
export type ProfileKey = (typeof PROFILE_KEYS)[number];

function readJsonObject(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON (${(error as Error).message}); fix it or remove it`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${path} should hold a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * The config with each profile's token merged in from the credentials file (a
 * token still found in config.json, written by an older convx, is read too and
 * moves to the credentials file on the next write).
 */
export function readConfig(path: string | undefined): ConfigFile {
  if (!path) return { profiles: {} };
  const file = (readJsonObject(path) ?? {}) as Partial<ConfigFile>;
  const profiles: Record<string, Profile> = {};
  for (const [name, profile] of Object.entries(file.profiles ?? {})) profiles[name] = { ...profile };
  const credentials = (readJsonObject(credentialsPath(path)) ?? {}) as { profiles?: Record<string, { token?: unknown }> };
  for (const [name, entry] of Object.entries(credentials.profiles ?? {})) {
    if (typeof entry?.token === 'string' && entry.token) profiles[name] = { ...profiles[name], token: entry.token };
  }
  return { ...(file.defaultProfile ? { defaultProfile: file.defaultProfile } : {}), profiles };
}

function writeWhole(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, content, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * Writes the config whole (temporary file, then rename), readable by its owner
 * only, with the tokens split off into the credentials file (also 0600; removed
 * when no profile has a token). The credentials are written first, so a token
 * is never only in memory.
 */
export function writeConfig(path: string, config: ConfigFile): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tokens: Record<string, { token: string }> = {};
  const profiles: Record<string, Profile> = {};
  for (const [name, { token, ...rest }] of Object.entries(config.profiles)) {
    // the settings in one order (mode, data, api ...), whatever order they were set in; unknown keys kept after them
    const ordered: Record<string, unknown> = {};
    for (const key of PROFILE_KEYS) if (rest[key] !== undefined) ordered[key] = rest[key];
    profiles[name] = { ...ordered, ...rest } as Profile;
    if (token) tokens[name] = { token };
  }
  const secrets = credentialsPath(path);
  if (Object.keys(tokens).length) writeWhole(secrets, `${JSON.stringify({ profiles: tokens }, null, 2)}\n`);
  else rmSync(secrets, { force: true });
  const file: ConfigFile = { ...(config.defaultProfile ? { defaultProfile: config.defaultProfile } : {}), profiles };
  writeWhole(path, `${JSON.stringify(file, null, 2)}\n`);
}

export function profileName(flag: string | undefined, env: Record<string, string | undefined>, config: ConfigFile): string {
  return flag ?? env.CONVX_PROFILE ?? config.defaultProfile ?? DEFAULT_PROFILE;
}

export interface ResolvedSettings {
  mode: 'local' | 'api';
  data?: string;
  /** Where data comes from, as a message names it: --data, CONVX_DATA, or the profile's data. */
  dataFrom?: string;
  api?: string;
  deliveryApi?: string;
  plugin?: string;
  format?: string;
  /** The time zone of a reporting command's period when --tz is not given (CONVX_TZ, the profile's tz); checked where a command takes it (commands/shared.ts, naming where it came from). */
  tz?: string;
  /** Where tz comes from, as an error names it: CONVX_TZ, or the profile's tz. */
  tzFrom?: string;
  /** The profile's tracking lint settings (comma-separated), for convx validate. */
  trackingDomains?: string;
  trackingParams?: string;
  /** Where the token comes from, resolved lazily (reading stdin or a file). */
  token?: string;
  profile: string;
  /** DuckDB worker threads of local mode (CONVX_THREADS); undefined: one per core. */
  threads?: number;
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
    { label: 'flags', data: flags.data, api: flags.api, names: ['--data', '--api'], givenNow: true },
    { label: 'environment', data: env.CONVX_DATA, api: env.CONVX_API_URL, names: ['CONVX_DATA', 'CONVX_API_URL'], givenNow: true },
    {
      label: `profile "${name}"`,
      data: profile.mode === 'api' ? undefined : profile.data,
      api: profile.mode === 'local' ? undefined : profile.api,
      names: ['data', 'api'],
      givenNow: false,
    },
  ];
  let mode: 'local' | 'api' = 'local';
  let data: string | undefined;
  let dataFrom: string | undefined;
  let api: string | undefined;
  for (const level of levels) {
    if (level.data && level.api) {
      throw new UsageError(`${level.names[0]} and ${level.names[1]} both set (${level.label}): choose local mode or API mode`);
    }
    if (level.data || level.api) {
      mode = level.api ? 'api' : 'local';
      data = level.data;
      dataFrom = level.givenNow ? level.names[0] : `data of profile "${name}"`;
      api = level.api;
      // A password in a URL given now (flag, environment) is refused at once; a profile's when it is
      // used (ApiClient), so that `convx config set api URL` can still replace it.
      if (level.givenNow) checkApiUrl(api, level.names[1]!);
      break;
    }
  }
  const pick = <T>(...values: (T | undefined)[]) => values.find((v) => v !== undefined && v !== '');
  const settings: ResolvedSettings = { mode, profile: name };
  if (data) {
    settings.data = data;
    settings.dataFrom = dataFrom;
  }
  if (api) settings.api = api;
  checkApiUrl(flags.deliveryApi, '--delivery-api');
  if (flags.deliveryApi === undefined) checkApiUrl(env.CONVX_DELIVERY_API_URL, 'CONVX_DELIVERY_API_URL');
  const deliveryApi = pick(flags.deliveryApi, env.CONVX_DELIVERY_API_URL, profile.deliveryApi);
  if (deliveryApi) settings.deliveryApi = deliveryApi;
  const plugin = pick(flags.plugin, profile.plugin);
  if (plugin) settings.plugin = plugin;
  const format = pick(flags.format, profile.format);
  if (format) settings.format = format;
  const tz = pick(env.CONVX_TZ, profile.tz);
  if (tz) {
    settings.tz = tz;
    settings.tzFrom = pick(env.CONVX_TZ) ? 'CONVX_TZ' : `tz of profile "${name}"`;
  }
  if (profile.trackingDomains) settings.trackingDomains = profile.trackingDomains;
  if (profile.trackingParams) settings.trackingParams = profile.trackingParams;
  const token = pick(flags.token, env.CONVX_TOKEN, profile.token);
  if (token) settings.token = token.trim();
  const threads = threadsOf(env.CONVX_THREADS);
  if (threads !== undefined) settings.threads = threads;
  return settings;
}

/** The DuckDB threads CONVX_THREADS asks for, as the options of a local open: none when it is unset. */
export function threadsOption({ settings }: { settings: ResolvedSettings }): { threads?: number } {
  return settings.threads !== undefined ? { threads: settings.threads } : {};
}

/** The most DuckDB threads CONVX_THREADS may ask for. */
export const MAX_THREADS = 256;

/** CONVX_THREADS: a whole number of DuckDB threads from 1 to MAX_THREADS; unset or empty: one per core. */
export function threadsOf(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_THREADS) {
    throw new UsageError(`CONVX_THREADS must be a whole number of DuckDB threads from 1 to ${MAX_THREADS} (got "${value}")`, [], 'unset it to use one thread per core');
  }
  return n;
}

/** A parsed http(s) URL, else undefined (text that is no URL, or a URL of another scheme: `user:pw@host` parses as scheme `user:`). */
function httpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A URL as it may be shown: a user name and password in it (http://user:pw@host/v1) replaced by
 * `user:***` (a lone user name by `***`, it may be a token). Text that is no http(s) URL
 * (`http://u:pa/ss@host`, `u:pw@host/v1`) is redacted the same way, up to its last @: a
 * password may hold / ? # and @, so nothing before that @ is shown but a user name.
 */
export function redactUrl(text: string): string {
  const url = httpUrl(text);
  if (url && !url.username && !url.password) return text;
  const at = text.lastIndexOf('@');
  if (at < 0) return text;
  const scheme = /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.exec(text)?.[0] ?? '';
  const userinfo = text.slice(scheme.length, at);
  const colon = userinfo.indexOf(':');
  return `${scheme}${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : '***'}@${text.slice(at + 1)}`;
}

/**
 * Whether a URL carries a user name or password (http://user:pw@host/v1). Text that is no
 * http(s) URL counts when an @ stands after its `scheme://` (a password with / or ? in it
 * breaks the parse) or before its first / ? # (`user:pw@host/v1`).
 */
export function hasCredentials(text: string): boolean {
  const url = httpUrl(text);
  if (url) return url.username !== '' || url.password !== '';
  return /^(?:[a-z][a-z0-9+.-]*:)?\/\/.*@/is.test(text) || /^[^/?#]*@/.test(text);
}

/** The refusal of a URL with credentials, naming where it came from; the password never in it. */
export function credentialsInUrlError(text: string, source: string): UsageError {
  return new UsageError(
    `${source}: the URL holds a password or user name (${redactUrl(text)}); convx does not send credentials from a URL`,
    [],
    'give the URL without them (https://host/v1) and use a bearer token: --token-file FILE, CONVX_TOKEN, or `convx auth login --with-token`',
  );
}

/** Refuses an API base URL with credentials (a UsageError naming its source, the password redacted). */
export function checkApiUrl(text: string | undefined, source: string): void {
  if (text !== undefined && hasCredentials(text)) throw credentialsInUrlError(text, source);
}

/**
 * The token in a token file's text (--token-file, `auth login --with-token`): one line, with
 * spaces and a trailing newline trimmed. A second line is refused (a usage error, exit 2):
 * the file is not what it should be, and a header cannot carry it. The message never shows
 * the file's content.
 */
export function tokenFromText(text: string, source: string): string {
  const token = text.trim();
  const lines = token.split(/\r\n|\r|\n/);
  if (lines.length > 1) {
    throw new UsageError(
      source.startsWith('--token-file') || source.startsWith('auth login')
        ? `${source}: the token file has ${lines.length} lines; it should hold the token alone, on one line (its content is not shown)`
        : `${source}: the token has ${lines.length} lines; a token is one line (its content is not shown)`,
      [],
      source.startsWith('--token-file') || source.startsWith('auth login')
        ? 'write only the token in the file, e.g. printf %s "$TOKEN" > token.txt'
        : 'set it to the token alone, e.g. export CONVX_TOKEN="$(cat token.txt)", or run `convx auth login --with-token < token.txt`',
    );
  }
  return token;
}

/** Shows enough of a token to tell two apart, never the token. */
export function maskToken(token: string): string {
  if (token.length <= 12) return '****';
  return `****${token.slice(-4)} (${token.length} characters)`;
}
