import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { ChalkInstance } from 'chalk';
import type { Backend, Lookups } from './backend.js';
import { colorLevel, type GlobalFlags } from './globals.js';
import { checkTokenText } from './model/token-text.js';
import { checkProfileName, configPath, deferredSettings, noProfileError, profileChoice, profileFlag, readConfig, settingKey, tokenFromText, type ConfigFile, type ConfigRead, type Repair, type ResolvedSettings } from './config.js';
import { AuthError, UsageError } from './errors.js';
import { FORMATS, isFormat, MARKDOWN, type AnyFormat } from './output/formats.js';
import { streamSink, terminalColumns } from './output/sink.js';
import { createLogger, type Logger } from './output/logger.js';
import { painter } from './output/no-color.js';
import { ResultWriter } from './output/writer.js';
import { shellWord } from './words.js';

export type { Logger } from './output/logger.js';

/** Everything a command may touch of the outside world; tests pass their own. */
export interface Io {
  stdin: Readable;
  stdinIsTTY: boolean;
  stdout: Writable;
  stderr: Writable;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  env: Record<string, string | undefined>;
  cwd: string;
  now: () => Date;
  /** Waits ms: API mode's pause before a retry (default: a timer; a test passes its own clock). */
  sleep?: (ms: number) => Promise<void>;
  /** performance.now() when the process started (bin/convx.js: 0), so that CONVX_TIMINGS counts the time before run() too. */
  startedAt?: number;
  /** Calls handler on the signal instead of the default (exit); returns the unsubscribe function. */
  onSignal(signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP', handler: () => void): () => void;
  /**
   * Calls handler (synchronously, its writes to stderr sync) when SIGINT or SIGTERM ends the process
   * the default way, no command's handler taking it, just before it exits (bin/convx.js); returns the
   * unsubscribe function. CONVX_TIMINGS prints the timings so far with it (cli.ts, runTimed).
   */
  onSignalExit?(handler: () => void): () => void;
}

/**
 * The global flags as the context takes them: the parsed flags, typed from
 * their definitions (GLOBAL_OPTIONS), and what the command adds.
 */
export interface GlobalOptions extends Partial<GlobalFlags> {
  /** On unless --no-color. */
  color: boolean;
  /** How the format flag was typed (-o or --format), for messages; default --format. */
  formatFlag?: string;
  /** The command may name a profile that does not exist yet (auth login, init). */
  newProfile?: boolean;
  /** The setting the command replaces or removes, as typed (config set|unset KEY): a wrong stored value of it does not stop the command. */
  repairs?: string;
  /** The command sets the config up or shows it, or takes no --profile: a wrong stored setting is a warning, not an error (config-file.ts, ConfigRead; cli.ts). */
  tolerant?: boolean;
  /** The command needs no setting of the config file: one it cannot read (not JSON, a wrong shape) is a warning, and it runs without it (cli.ts). */
  configOptional?: boolean;
  /** The formats the command prints (validate has its own). */
  formats?: readonly AnyFormat[];
}

/**
 * What a command asks of its backend. validation: the dataset needs contacts,
 * not orders and touches. onPage: API mode, the rows fetched so far of every
 * page (--all), for the command's progress line.
 */
export interface OpenBackendOptions {
  validation?: boolean;
  onPage?: (fetched: number, total: number) => void;
}

/** Opens the backend a command works on, from the context's settings and flags. */
export type BackendFactory = (ctx: Context, options: OpenBackendOptions) => Promise<Backend>;

/**
 * Opens what shell completion looks values up in (`Backend.lookup`), from the context's settings
 * and flags: openDefaultLookups of backends.ts, or any backend (a test's).
 */
export type LookupsFactory = (ctx: Context) => Promise<Lookups>;

export interface Context {
  io: Io;
  globals: GlobalOptions;
  /** Colours for stdout and for stderr, each on only where it is a terminal. */
  chalk: ChalkInstance;
  errChalk: ChalkInstance;
  log: Logger;
  output: ResultWriter;
  format: AnyFormat;
  /** Flags, environment and the config profile combined (flags first). */
  settings: ResolvedSettings;
  /** Where the config file is, or undefined when neither XDG_CONFIG_HOME nor HOME is set. */
  configFile: string | undefined;
  config: ConfigFile;
  resolvePath(path: string): string;
  /** The dataset directory of local mode; localOnly: for a command that has no API mode (serve), whose missing --data names no --api. */
  dataDir(options?: { localOnly?: boolean }): string;
  /** The bearer token of API mode: --token-file (or - for stdin), CONVX_TOKEN, or the profile. */
  token(): Promise<string>;
  /** The hint of the reporting or delivery API's refusal of the token (401, 403): where it came from, and how to check or replace it (refusedTokenHint). */
  tokenRefusedHint(api: 'reporting' | 'delivery'): string;
  /** API mode: --timeout, in seconds (default 30). */
  timeoutSeconds: number;
  /** The command's backend, from the factory the context was made with (openDefaultBackend of backends.ts unless a test gives one). */
  openBackend(options?: OpenBackendOptions): Promise<Backend>;
  /** What completion looks values up in: from the look-ups factory the context was made with, else the command's backend. */
  openLookups(): Promise<Lookups>;
}

export const DEFAULT_TIMEOUT_SECONDS = 30;

/** All of a stream as text (stdin for --token-file -, validate -, auth login --with-token). */
export async function readAll(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  return text;
}

export function parseFormat(value: string | undefined, isTTY: boolean, allowed: readonly AnyFormat[] = FORMATS, flag = '--format'): AnyFormat {
  if (value === undefined) return isTTY ? 'table' : allowed.includes('tsv') ? 'tsv' : 'json';
  const format = allowed.find((f) => f === value);
  if (format === undefined) throw new UsageError(`${flag}: "${value}" is not one of ${allowed.join(', ')}`);
  return format;
}

/** --reference-currency in any case, upper-cased; a usage error unless three letters. */
export function parseReferenceCurrency(value: string): string {
  const code = value.trim();
  if (!/^[A-Za-z]{3}$/.test(code)) throw new UsageError(`--reference-currency: "${value}" is not a three-letter currency code (e.g. EUR)`);
  return code.toUpperCase();
}

/** --timeout in seconds (default 30): a usage error unless a positive number. */
function parseTimeout(value: string = String(DEFAULT_TIMEOUT_SECONDS)): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`--timeout: "${value}" is not a number of seconds`);
  if (Number(value) <= 0) throw new UsageError(`--timeout: must be more than 0 seconds, not ${value}`);
  return Number(value);
}

/**
 * The config file, its profiles, and the settings of the profile in use combined with the flags and
 * environment. A profile that does not exist is an error however it was named (--profile,
 * CONVX_PROFILE, defaultProfile) unless the command makes it; one named by the file's defaultProfile
 * only where the command uses its settings (a backend's), so that `convx config` can still repair
 * the file. The mode is resolved only where a command needs a backend (deferredSettings).
 */
function profileSettings(io: Io, globals: GlobalOptions, warn: (message: string) => void): { file: string | undefined; config: ConfigFile; settings: ResolvedSettings } {
  const file = configPath(io.env);
  const key = globals.repairs === undefined ? undefined : settingKey(globals.repairs);
  // the profile in use (config set|unset KEY: the one it changes), as chosen below, from the file's defaultProfile
  const inUse = (defaultProfile: string | undefined) => profileChoice(globals.profile, io.env, { profiles: {}, ...(defaultProfile === undefined ? {} : { defaultProfile }) }).name;
  const repair: Repair | undefined = key && { key, profile: inUse };
  const { config, unread } = readConfigOrWarn(file, warn, globals, { tolerant: globals.tolerant ?? false, inUse, ...(repair ? { repair } : {}) });
  const { name, from } = profileChoice(globals.profile, io.env, config);
  checkProfileName(name, from);
  // a file the command could not read (configOptional) holds no profile to miss: CONVX_PROFILE is left unused, as the file is
  const missing = !unread && !Object.hasOwn(config.profiles, name) && from !== 'default' && !globals.newProfile;
  if (missing && from !== 'defaultProfile') throw noProfileError(name, from, file, config);
  const settings = deferredSettings(
    {
      flags: { data: globals.data, api: globals.api, deliveryApi: globals.deliveryApi, plugin: globals.plugin, format: globals.format },
      env: io.env,
      profile: (Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined) ?? {},
      profileName: name,
    },
    () => {
      if (missing) throw noProfileError(name, from, file, config);
    },
  );
  return { file, config, settings };
}

/** The config file; where the command needs none of it (configOptional), one it cannot read is a warning and no config (unread). */
function readConfigOrWarn(file: string | undefined, warn: (message: string) => void, globals: GlobalOptions, read: ConfigRead): { config: ConfigFile; unread: boolean } {
  try {
    return { config: readConfig(file, warn, read), unread: false };
  } catch (error) {
    if (!globals.configOptional || !(error instanceof UsageError)) throw error;
    warn(`${error.message.split('\n')[0]}. This command uses none of its settings and runs without them.`);
    return { config: readConfig(undefined), unread: true };
  }
}

/** ctx.dataDir: the dataset of local mode, which must exist. */
function dataDirOf(settings: ResolvedSettings, resolvePath: (path: string) => string, flagOf: (profile: string) => string): (options?: { localOnly?: boolean }) => string {
  return (options = {}) => {
    if (settings.mode === 'api') throw new UsageError('this command works on a local dataset: pass --data DIR');
    if (!settings.data && settings.apiMissing !== undefined) {
      const profile = settings.apiMissing;
      throw new UsageError(`profile "${profile}" is in API mode but has no api`, [], `convx config set api URL${flagOf(profile)} (or pass --data DIR for local mode)`);
    }
    if (!settings.data) {
      // The samples are in a checkout, not in an installed copy: where they are not at hand, a dataset to make
      const command = options.localOnly ? 'convx serve --data' : 'convx report --data';
      const hint = existsSync(resolvePath('samples/shop'))
        ? `try: ${command} samples/shop`
        : `try a generated shop: convx data generate --out demo-shop, then ${command} demo-shop${options.localOnly ? '' : ' --from 2024-03-01 --to 2024-03-31'}`;
      if (options.localOnly) throw new UsageError('no dataset: pass --data DIR or set CONVX_DATA (a dataset\'s folder, a file of convx data import, or a folder of plugin files)', [], hint);
      // a delivery API alone makes no API mode: the reporting API's URL does (validate sends to the delivery API then)
      if (settings.deliveryApi) throw new UsageError('no dataset and no --api: a delivery API alone does not make API mode; pass --api URL (the reporting API) too, or --data DIR', [], 'CONVX_API_URL sets --api as CONVX_DELIVERY_API_URL sets --delivery-api');
      throw new UsageError('no dataset: pass --data DIR or set CONVX_DATA (or --api URL for API mode)', [], hint);
    }
    // A missing dataset (directory or .duckdb file) is "not found: PATH" as given, for every command.
    const path = resolvePath(settings.data);
    if (!existsSync(path)) {
      throw new UsageError(`not found: ${settings.data}`, [], `${settings.dataFrom ?? '--data'} names a dataset directory or a .duckdb file written by \`convx data import\``);
    }
    return path;
  };
}

/** ctx.token: the bearer token, read once: --token-file (or - for stdin), CONVX_TOKEN, or the profile. */
function tokenReader(io: Io, globals: GlobalOptions, settings: ResolvedSettings, resolvePath: (path: string) => string, flagOf: (profile: string) => string): () => Promise<string> {
  let tokenValue: Promise<string> | undefined;
  return () =>
    (tokenValue ??= (async () => {
      let value: string | undefined;
      if (globals.tokenFile === '-') value = await readAll(io.stdin);
      else if (globals.tokenFile !== undefined) {
        try {
          value = readFileSync(resolvePath(globals.tokenFile), 'utf8');
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') throw new UsageError(`not found: ${globals.tokenFile}`, [], '--token-file names a file that holds the bearer token, or - for stdin');
          throw new UsageError(`--token-file: cannot read ${globals.tokenFile}: ${code ?? error}`);
        }
      } else {
        value = settings.token;
        const refused = value === undefined ? settings.storedTokenRefused : undefined;
        if (refused) throw new UsageError(refused.message, [], refused.hint);
      }
      // One line, whatever the source (the message never shows it): a header cannot carry two.
      const source = { stdin: '--token-file -', file: `--token-file ${globals.tokenFile}`, env: 'CONVX_TOKEN', profile: "the profile's token" }[tokenSource(io, globals)];
      value = value === undefined ? undefined : tokenFromText(value, source);
      // Named by where it came from, before any request (the client's own check can only say "the API token").
      if (value) checkTokenText(value, source);
      if (!value) {
        throw new AuthError('no API token', `set CONVX_TOKEN, pass --token-file FILE (or - for stdin), or run \`convx auth login${flagOf(settings.profile)}\``);
      }
      return value;
    })());
}

/** Where the bearer token comes from: --token-file (- for stdin), CONVX_TOKEN (an empty one is unset, as config.ts reads it), or the profile. */
function tokenSource(io: Io, globals: GlobalOptions): 'stdin' | 'file' | 'env' | 'profile' {
  if (globals.tokenFile === '-') return 'stdin';
  if (globals.tokenFile !== undefined) return 'file';
  return io.env.CONVX_TOKEN ? 'env' : 'profile';
}

/**
 * ctx.tokenRefusedHint: what to do when an API refuses the token, which it names by where it came
 * from. The reporting API's: the `convx auth status` of the same profile, --api and --token-file
 * checks it; the delivery API's: `auth status` asks the reporting API only. A profile's is replaced
 * by logging in again.
 */
function refusedTokenHint(io: Io, globals: GlobalOptions, settings: ResolvedSettings, flagOf: (profile: string) => string): (api: 'reporting' | 'delivery') => string {
  const source = tokenSource(io, globals);
  const file = shellWord(globals.tokenFile ?? '');
  const login = `\`convx auth login${flagOf(settings.profile)}\``;
  const origin = { stdin: 'the one read from stdin', file: `the one that ${file} holds`, env: "CONVX_TOKEN's, which comes before the profile's", profile: `profile "${settings.profile}"'s` }[source];
  const same = [flagOf(settings.profile), ...(globals.api !== undefined ? [` --api ${shellWord(globals.api)}`] : []), ...(globals.tokenFile !== undefined ? [` --token-file ${file}`] : [])].join('');
  return (api) => {
    if (api === 'delivery') return `the token is ${origin}, and the delivery API must accept it too (\`convx auth status\` asks the reporting API only)${source === 'profile' ? `; log in again with ${login}` : ''}`;
    const status = `check the token with \`convx auth status${same}\``;
    return source === 'profile' ? `${status}, or log in again with ${login}` : `${status}: it is ${origin}`;
  };
}

/** ctx.output: the one writer of results, on stdout, as the flags and the terminal say. */
function resultWriter(io: Io, globals: GlobalOptions, format: AnyFormat, chalk: ChalkInstance, log: Logger): ResultWriter {
  const fields = globals.fields
    ?.split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  // only commas: no field, which is not every field (an empty value is refused as it is parsed, cli.ts)
  if (fields !== undefined && !fields.length) throw new UsageError(`--fields: "${globals.fields}" names no field`);
  return new ResultWriter(streamSink(io.stdout), {
    // validate's own formats (github, junit) are printed by validate, not by the writer
    format: isFormat(format) || format === MARKDOWN ? format : 'json',
    chalk,
    formulaEscape: globals.formulaEscape !== false,
    ...(fields?.length ? { fields } : {}),
    wide: globals.wide === true,
    // The terminal's columns ($COLUMNS where it reports 0); none when stdout is not a terminal.
    width: terminalColumns(io.stdout, io.env) ?? null,
    // On a terminal, machine formats are defused too (a person reads them there).
    terminal: io.stdoutIsTTY,
    // "N columns left out … --wide shows every column" is a note for a person: stderr, not stdout.
    notice: (message) => log.info(message),
  });
}

/**
 * What a command gets, from the global flags and the outside world (io). The
 * backend comes from `backends` (by default the API or the local dataset, as
 * the settings say); a test passes its own. Look-ups (shell completion) come from
 * `lookups`, else from the backend.
 */
export async function createContext(io: Io, given: GlobalOptions, backends: BackendFactory, lookups: LookupsFactory = (ctx) => backends(ctx, {})): Promise<Context> {
  const globals: GlobalOptions =
    given.referenceCurrency === undefined ? given : { ...given, referenceCurrency: parseReferenceCurrency(given.referenceCurrency) };
  // chalk loads only where something is coloured (output/no-color.ts)
  const [chalk, errChalk] = await Promise.all([painter(colorLevel(io.stdoutIsTTY, io.env, globals.color)), painter(colorLevel(io.stderrIsTTY, io.env, globals.color))]);
  // Notes, warnings and progress may quote data values: no control character reaches the terminal (output/logger.ts).
  const noteWidth = io.stderrIsTTY ? terminalColumns(io.stderr, io.env) : undefined;
  const log = createLogger(io.stderr, errChalk, { quiet: globals.quiet === true, terminal: io.stderrIsTTY, ...(noteWidth !== undefined ? { width: noteWidth } : {}) });
  const { file, config, settings } = profileSettings(io, globals, (message) => log.warn(message));
  // A profile's default format applies where the command prints it (validate has no csv, say); a flag always does.
  const allowed = globals.formats ?? FORMATS;
  const configured = globals.format ?? allowed.find((f) => f === settings.format);
  const format = parseFormat(configured, io.stdoutIsTTY, allowed, globals.formatFlag);
  const resolvePath = (path: string) => (isAbsolute(path) ? path : resolve(io.cwd, path));
  const timeoutSeconds = parseTimeout(globals.timeout);
  // ` --profile NAME` where a command must name the profile, else nothing
  const flagOf = (profile: string) => profileFlag(profile, io.env, config);
  const ctx: Context = {
    io,
    globals,
    chalk,
    errChalk,
    log,
    format,
    output: resultWriter(io, globals, format, chalk, log),
    settings,
    configFile: file,
    config,
    resolvePath,
    dataDir: dataDirOf(settings, resolvePath, flagOf),
    token: tokenReader(io, globals, settings, resolvePath, flagOf),
    tokenRefusedHint: refusedTokenHint(io, globals, settings, flagOf),
    timeoutSeconds,
    openBackend: (options = {}) => backends(ctx, options),
    openLookups: () => lookups(ctx),
  };
  return ctx;
}
