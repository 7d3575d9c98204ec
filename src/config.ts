/**
 * The configuration file ($XDG_CONFIG_HOME/convx/config.json, mode 0600 in a
 * 0700 directory), the credentials file beside it (credentials.json, mode 0600:
 * the only place a token is written) and how flags, environment and config
 * combine: flags beat environment beats config.
 */
import { UsageError } from './errors.js';
import { shellWord } from './words.js';
import { DEFAULT_PROFILE, profileNameProblem, profileOption, type ConfigFile, type Profile } from './config-file.js';

export {
  CONFIG_KEYS,
  configPath,
  credentialsPath,
  DEFAULT_PROFILE,
  lockPath,
  PROFILE_KEYS,
  profileNameProblem,
  profileOption,
  readConfig,
  replaceWrongSettings,
  setAside,
  SETTING_CHECKS,
  settingKey,
  settingProblem,
  tokenLocation,
  updateConfig,
  wrongSettings,
  type ConfigFile,
  type ConfigKey,
  type ConfigRead,
  type Profile,
  type ProfileKey,
  type Repair,
} from './config-file.js';

/**
 * ` --profile NAME` (quoted for the shell) for a command a message suggests to use profile name, or
 * nothing where a command without it uses that profile anyway: "default", when no CONVX_PROFILE or
 * defaultProfile names another.
 */
export function profileFlag(name: string, env: Record<string, string | undefined>, config: ConfigFile): string {
  return name === DEFAULT_PROFILE && profileName(undefined, env, config) === name ? '' : ` ${profileOption(name)}`;
}

/** The profile's name: --profile, else CONVX_PROFILE (an empty one counts as unset), else defaultProfile, else "default". */
export function profileName(flag: string | undefined, env: Record<string, string | undefined>, config: ConfigFile): string {
  return profileChoice(flag, env, config).name;
}

/** Where the name of the profile in use comes from, as a message names it. */
export type ProfileSource = '--profile' | 'CONVX_PROFILE' | 'defaultProfile' | 'default';

/** The profile's name and where it comes from (--profile, CONVX_PROFILE, defaultProfile of the file, or "default"). */
export function profileChoice(flag: string | undefined, env: Record<string, string | undefined>, config: ConfigFile): { name: string; from: ProfileSource } {
  if (flag !== undefined) return { name: flag, from: '--profile' };
  if (env.CONVX_PROFILE !== undefined && env.CONVX_PROFILE !== '') return { name: env.CONVX_PROFILE, from: 'CONVX_PROFILE' };
  if (config.defaultProfile !== undefined) return { name: config.defaultProfile, from: 'defaultProfile' };
  return { name: DEFAULT_PROFILE, from: 'default' };
}

/** A name that cannot be a profile's (`__proto__`), refused as a usage error naming where it came from. */
export function checkProfileName(name: string, from: ProfileSource): void {
  const problem = profileNameProblem(name);
  if (problem) throw new UsageError(`${from}: "${name}" ${problem}`, [], 'give another profile name');
}

/** The error of a profile that does not exist, however it was named (--profile, CONVX_PROFILE, defaultProfile). */
export function noProfileError(name: string, from: ProfileSource, file: string | undefined, config: ConfigFile): UsageError {
  const names = Object.keys(config.profiles).sort();
  const hint =
    from === 'CONVX_PROFILE'
      ? 'unset CONVX_PROFILE, or set it to one of the profiles'
      : from === 'defaultProfile'
        ? `the file's defaultProfile names it: convx config set defaultProfile NAME, or convx config unset defaultProfile`
        : undefined;
  return new UsageError(`no profile "${name}" in ${file ?? 'the config'}; profiles: ${names.join(', ') || 'none'}`, [], hint);
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
  /** The token of --token-file (given through flags), CONVX_TOKEN, or the profile's when the API in effect is the one it was stored for. */
  token?: string;
  /** Why the profile's stored token is not used: the API in effect is another than the one it was stored for (an error when a token is needed). */
  storedTokenRefused?: { message: string; hint: string };
  /** A profile in API mode without an api, where nothing else names a dataset or an API (a dataset is then asked for by that). */
  apiMissing?: string;
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

/** The settings that choose and reach a backend: resolved only where a command needs one (deferredSettings). */
const BACKEND_KEYS = ['mode', 'data', 'dataFrom', 'api', 'deliveryApi', 'token', 'storedTokenRefused', 'apiMissing', 'threads'] as const;
type BackendSettings = Pick<ResolvedSettings, (typeof BACKEND_KEYS)[number]>;

const pick = <T>(...values: (T | undefined)[]) => values.find((v) => v !== undefined && v !== '');

/**
 * Flags beat environment beats config, level by level: the first level that
 * names a dataset or an API decides the mode, and naming both there is an error.
 */
export function resolveSettings(sources: SettingSources): ResolvedSettings {
  return { ...otherSettings(sources), ...backendSettings(sources) };
}

/**
 * The settings as resolveSettings makes them, but the mode, dataset, API, token and threads are
 * resolved when first read (and an error of theirs thrown then, each time): a command that needs
 * no backend (`convx config ...`) works whatever state the mode is in. check runs before they are.
 */
export function deferredSettings(sources: SettingSources, check: () => void = () => undefined): ResolvedSettings {
  const settings = otherSettings(sources) as ResolvedSettings;
  let resolved: BackendSettings | undefined;
  const backend = (): BackendSettings => {
    check();
    return (resolved ??= backendSettings(sources));
  };
  for (const key of BACKEND_KEYS) Object.defineProperty(settings, key, { get: () => backend()[key], enumerable: true, configurable: true });
  return settings;
}

/** The settings that need no mode: the profile's name, plugin, format, time zone and tracking lint. */
function otherSettings({ flags, env, profile, profileName: name }: SettingSources): Omit<ResolvedSettings, keyof BackendSettings> {
  const settings: Omit<ResolvedSettings, keyof BackendSettings> = { profile: name };
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
  return settings;
}

function backendSettings({ flags, env, profile, profileName: name }: SettingSources): BackendSettings {
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
  let apiFrom: string | undefined;
  for (const level of levels) {
    if (level.data && level.api) {
      throw new UsageError(`${level.names[0]} and ${level.names[1]} both set (${level.label}): choose local mode or API mode`);
    }
    if (level.data || level.api) {
      mode = level.api ? 'api' : 'local';
      data = level.data;
      dataFrom = level.givenNow ? level.names[0] : `data of profile "${name}"`;
      api = level.api;
      apiFrom = level.givenNow ? level.names[1] : `api of profile "${name}"`;
      // A password in a URL given now (flag, environment) is refused at once; a profile's when it is
      // used (ApiClient), so that `convx config set api URL` can still replace it.
      if (level.givenNow) checkApiUrl(api, level.names[1]!);
      break;
    }
  }
  const settings: BackendSettings = { mode };
  if (!data && !api && profile.mode === 'api') settings.apiMissing = name;
  if (data) {
    settings.data = data;
    settings.dataFrom = dataFrom;
  }
  if (api) settings.api = api;
  checkApiUrl(flags.deliveryApi, '--delivery-api');
  if (flags.deliveryApi === undefined) checkApiUrl(env.CONVX_DELIVERY_API_URL, 'CONVX_DELIVERY_API_URL');
  const deliveryApi = pick(flags.deliveryApi, env.CONVX_DELIVERY_API_URL, profile.deliveryApi);
  if (deliveryApi) settings.deliveryApi = deliveryApi;
  const given = pick(flags.token, env.CONVX_TOKEN);
  if (given) settings.token = given.trim();
  else if (profile.token) {
    const deliveryFrom = pick(flags.deliveryApi) ? '--delivery-api' : pick(env.CONVX_DELIVERY_API_URL) ? 'CONVX_DELIVERY_API_URL' : `deliveryApi of profile "${name}"`;
    const refused =
      api !== undefined && !sameApi(api, profile.api)
        ? storedTokenRefusal(name, profile.api, api, apiFrom!)
        : api !== undefined && deliveryApi !== undefined && !sameApi(deliveryApi, profile.deliveryApi)
          ? storedTokenRefusal(name, profile.deliveryApi, deliveryApi, deliveryFrom, 'delivery ')
          : undefined;
    if (refused) settings.storedTokenRefused = refused;
    else if (api !== undefined) settings.token = profile.token.trim();
  }
  const threads = threadsOf(env.CONVX_THREADS);
  if (threads !== undefined) settings.threads = threads;
  return settings;
}

/**
 * Whether two API base URLs are one API: the same origin (scheme, host, port) and path (a
 * trailing slash aside). A stored token goes only to the API it was stored for.
 */
export function sameApi(a: string, b: string | undefined): boolean {
  if (b === undefined) return false;
  const key = (text: string) => {
    const url = httpUrl(text);
    return url ? `${url.origin}${url.pathname.replace(/\/+$/, '')}` : text.replace(/\/+$/, '');
  };
  return key(a) === key(b);
}

function storedTokenRefusal(name: string, storedFor: string | undefined, api: string, from: string, what = ''): { message: string; hint: string } {
  return {
    message:
      `the token stored in profile "${name}" is for ${storedFor === undefined ? `no ${what}API (the profile has no ${what ? 'deliveryApi' : 'api'})` : `the ${what}API ${redactUrl(storedFor)}`}, ` +
      `not for ${redactUrl(api)} (${from}); convx sends a stored token only to the API it was stored for`,
    hint:
      // A profile without a delivery API whose token is wanted for one: naming it in the profile sends the token there.
      storedFor === undefined && what
        ? `make it the profile's, and its token goes to it: convx config set deliveryApi ${shellWord(api)} ${profileOption(name)}; or give a token for this API: --token-file FILE (or - for stdin) or CONVX_TOKEN`
        : 'give a token for this API: --token-file FILE (or - for stdin) or CONVX_TOKEN; or store one for it: convx auth login --api URL --profile NAME',
  };
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
