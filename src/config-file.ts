/**
 * The files of the configuration: config.json ($XDG_CONFIG_HOME/convx, else ~/.config/convx; mode
 * 0600 in a 0700 directory) and credentials.json beside it (mode 0600: the only place a token is
 * written). Each is read with its shape and every value checked (a file written by hand fails
 * with the file, the key and what is wrong, never quoting a value of it), and changed under a
 * lock (config.json.lock, created with O_EXCL), read again, changed and written whole (a temporary
 * file renamed over it; a symbolic link written through, its target replaced).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync, writeSync, chmodSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { ConvxError, ExitCode, UsageError, writeFailure } from './errors.js';
import { zoneProblem } from './model/period.js';
import { TRACKING_DOMAIN, TRACKING_PARAM } from './model/validation.js';
import { FORMATS } from './output/formats.js';
import { alive } from './pid.js';
import { shellWord } from './words.js';

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
  /** The profiles by name; an object without a prototype (a name such as `constructor` is no inherited property). */
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';

import { CONFIG_KEYS, PROFILE_KEYS, type ProfileKey } from './model/settings.js';

export { CONFIG_KEYS, PROFILE_KEYS, type ProfileKey };

/**
 * What each setting may hold: the one check of a value, as `convx config set` stores it and as the
 * file is read (a hand-edited value included). Undefined: fine; else what is wrong, in words that
 * never quote the value.
 */
export const SETTING_CHECKS: Record<(typeof CONFIG_KEYS)[number], (value: string) => string | undefined> = {
  mode: (value) => (value === 'local' || value === 'api' ? undefined : 'is not one of local, api'),
  data: () => undefined,
  api: (value) => httpUrlProblem(value),
  deliveryApi: (value) => httpUrlProblem(value),
  plugin: () => undefined,
  format: (value) => ((FORMATS as readonly string[]).includes(value) ? undefined : `is not one of ${FORMATS.join(', ')}`),
  tz: (value) => (zoneProblem(value) === undefined ? undefined : 'is not an IANA time zone name (such as Europe/Prague)'),
  trackingDomains: (value) => (value.split(',').every((v) => TRACKING_DOMAIN.test(v.trim().toLowerCase())) ? undefined : 'is not a comma list of domain names'),
  trackingParams: (value) => (value.split(',').every((v) => TRACKING_PARAM.test(v.trim())) ? undefined : 'is not a comma list of query parameter names'),
  defaultProfile: (value) => profileNameProblem(value),
};

/** An API's base: an http(s) URL that parses (as the API client parses it: `http:///` and `http://[::1/v1` do not). */
function httpUrlProblem(value: string): string | undefined {
  return /^https?:\/\/\S+$/i.test(value) && URL.canParse(value) ? undefined : 'is not an http(s) URL';
}

/**
 * What is wrong with a setting's value as stored, else undefined: the check of the file as read and
 * of what `convx config set` and `convx init` store (run on the value as it will be written).
 */
export function settingProblem(key: ConfigKey, value: string): string | undefined {
  return value === '' ? 'is empty' : SETTING_CHECKS[key](value);
}

export type ConfigKey = (typeof CONFIG_KEYS)[number];

/** The setting a typed key names: the file's spelling (deliveryApi) or the flag's (delivery-api), in any case; undefined for none. */
export function settingKey(typed: string): ConfigKey | undefined {
  const wanted = typed.toLowerCase().replaceAll(/[-_]/g, '');
  return CONFIG_KEYS.find((k) => k.toLowerCase() === wanted);
}

/**
 * A read of a command that replaces or removes one setting (`convx config set|unset KEY`): a
 * stored value of that key that is not what it should be does not stop it. In the profile the
 * command changes, the value is left out of the config as read, and setAside says it was there;
 * elsewhere it is one of the wrong values any tolerant read keeps (ConfigRead). profile: the
 * profile the command changes, from the file's defaultProfile (as read, undefined where it is
 * unset or itself left out).
 */
export interface Repair {
  key: ConfigKey;
  profile: (defaultProfile: string | undefined) => string;
}

/**
 * How a command reads the config. A profile's setting whose stored value is not what it should be
 * (a hand edit) stops a command only where it could change what the command does: in the profile
 * in use (inUse, from the file's defaultProfile), for a command that is not tolerant. tolerant: a
 * command that sets the config up or shows it (`convx config`, `convx init`, `convx auth
 * login|logout`, shell completion; every write's read under the lock too) or that takes no
 * --profile and so uses no profile's settings (cli.ts), which a wrong value
 * never stops, else one wrong value would lock out the commands that repair it (and two wrong
 * values each other's repair). A value that does not stop the command is left out of the profile
 * as read (nothing uses it; init does not offer it), written back as it is (wrongSettings), and
 * warned about: each with the commands that fix it in the profile in use, one line per other
 * profile. A file whose shape is wrong, or a wrong defaultProfile, stops every command but the
 * repair of defaultProfile.
 */
export interface ConfigRead {
  tolerant?: boolean;
  repair?: Repair;
  /** The profile the command uses, from the file's defaultProfile (undefined where it is unset or wrong). */
  inUse?: (defaultProfile: string | undefined) => string;
}

/** Why a text cannot name a profile (empty, or `__proto__`, which a JSON object cannot hold as data everywhere), else undefined. */
export function profileNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name === '__proto__') return 'cannot name a profile (__proto__ is reserved)';
  return undefined;
}

/**
 * $XDG_CONFIG_HOME/convx/config.json, else ~/.config/convx/config.json; undefined with neither.
 * A relative XDG_CONFIG_HOME is ignored, as the XDG Base Directory specification says.
 */
export function configPath(env: Record<string, string | undefined>): string | undefined {
  const xdg = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  const base = xdg ?? (env.HOME ? join(env.HOME, '.config') : undefined);
  return base ? join(base, 'convx', 'config.json') : undefined;
}

/** credentials.json beside the config file: the profiles' tokens, and nothing else. */
export function credentialsPath(configFile: string): string {
  return join(dirname(configFile), 'credentials.json');
}

/** The lock of both files: config.json.lock beside config.json. */
export function lockPath(configFile: string): string {
  return `${configFile}.lock`;
}

/** Where a config file's path fails otherwise than a written file's (errors.ts, writeFailure), in words. */
const PATH_PROBLEMS: Record<string, string> = {
  EPERM: 'permission denied (it belongs to another user?)',
  EISDIR: 'it is a folder, not a file',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the path is too long',
  ENOENT: 'a folder of its path does not exist and cannot be made there',
};

/** What to do about a failure of the config's path, by its code. */
function whereHint(code: string | undefined): string {
  if (code === 'ENOTDIR' || code === 'ENOENT' || code === 'EISDIR') return 'set XDG_CONFIG_HOME (else HOME) to an absolute path of a folder you own, or move what is in the way';
  if (code === 'EACCES' || code === 'EPERM') return 'fix its permissions or owner, or set XDG_CONFIG_HOME to an absolute path of a folder you own';
  return 'set XDG_CONFIG_HOME to an absolute path of a folder you own';
}

/** A failure of the file system on a config file's path, as an error naming the path, why, and what to do (exit 2). */
function pathError(verb: string, path: string, error: unknown): ConvxError {
  if (error instanceof ConvxError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why = (code && PATH_PROBLEMS[code]) ?? writeFailure(error);
  return new UsageError(`cannot ${verb} ${path}: ${why}`, [], whereHint(code));
}

/** The text of a file, undefined when it does not exist; any other failure an error naming the file and why. */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw pathError('read', path, error);
  }
}

/**
 * Where text stops being JSON, as a line and column (1-based; a column counts UTF-16 code units, as
 * a JavaScript string does: a character beyond the BMP, an emoji, counts two), or undefined when it
 * is JSON. A small scanner of its own: JSON.parse's message quotes the text around the error, and a
 * file of tokens must never be quoted. It keeps its containers on a list of its own, so that no
 * depth of nesting misplaces an error.
 */
export function jsonErrorAt(text: string): { line: number; column: number } | undefined {
  const scanner = new JsonScanner(text);
  try {
    scanner.document();
    return undefined;
  } catch (error) {
    if (error !== scanner) throw error;
    const before = text.slice(0, scanner.at).split(/\r\n|\r|\n/);
    return { line: before.length, column: before.at(-1)!.length + 1 };
  }
}

/** A JSON number, matched where the scanner is (sticky: however long the number). */
const JSON_NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** JSON's grammar, read up to its first error (thrown as the scanner itself, `at` where it is). */
class JsonScanner {
  at = 0;
  /** The containers open around `at`, innermost last. */
  private readonly open: ('{' | '[')[] = [];
  constructor(private readonly text: string) {}

  fail(): never {
    throw this;
  }

  document(): void {
    do this.value();
    while (this.afterValue());
    this.space();
    if (this.at < this.text.length) this.fail();
  }

  private space(): void {
    while (this.at < this.text.length && ' \t\n\r'.includes(this.text[this.at]!)) this.at++;
  }

  /** A value, or the start of a container: its first key is read, and its first value is next. */
  private value(): void {
    this.space();
    let c = this.text[this.at];
    while (c === '{' || c === '[') {
      this.at++;
      this.space();
      if (this.text[this.at] === (c === '{' ? '}' : ']')) {
        this.at++;
        return;
      }
      this.open.push(c);
      if (c === '{') this.key();
      this.space();
      c = this.text[this.at];
    }
    if (c === '"') return this.string();
    for (const word of ['true', 'false', 'null']) {
      if (c === word[0]) {
        if (!this.text.startsWith(word, this.at)) this.fail();
        this.at += word.length;
        return;
      }
    }
    JSON_NUMBER.lastIndex = this.at;
    const match = JSON_NUMBER.exec(this.text);
    if (!match) this.fail();
    this.at += match[0].length;
  }

  /** After a value: containers it ends closed; true where another value follows (after a comma, and its key). */
  private afterValue(): boolean {
    while (this.open.length) {
      this.space();
      const inner = this.open.at(-1)!;
      const next = this.text[this.at];
      if (next === (inner === '{' ? '}' : ']')) {
        this.at++;
        this.open.pop();
        continue;
      }
      if (next !== ',') this.fail();
      this.at++;
      if (inner === '{') this.key();
      return true;
    }
    return false;
  }

  /** An object's key and its colon. */
  private key(): void {
    this.space();
    if (this.text[this.at] !== '"') this.fail();
    this.string();
    this.space();
    if (this.text[this.at] !== ':') this.fail();
    this.at++;
  }

  private string(): void {
    this.at++;
    while (this.at < this.text.length && this.text[this.at] !== '"') {
      if (this.text.charCodeAt(this.at) < 0x20) this.fail();
      if (this.text[this.at] === '\\') {
        this.at++;
        if (this.text[this.at] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at + 1, this.at + 5))) this.fail();
          this.at += 4;
        } else if (!'"\\/bfnrt'.includes(this.text[this.at] ?? 'x')) this.fail();
      }
      this.at++;
    }
    if (this.at >= this.text.length) this.fail();
    this.at++;
  }
}

/** A file's JSON object, undefined when the file does not exist; an error names the file and where, never its content. */
function readJsonObject(path: string): Record<string, unknown> | undefined {
  const read = readText(path);
  if (read === undefined) return undefined;
  // A byte order mark (Notepad, PowerShell) is no part of the JSON: read without it.
  const text = read.startsWith('\uFEFF') ? read.slice(1) : read;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const at = jsonErrorAt(text);
    throw new UsageError(`${path} is not valid JSON${at ? ` (at line ${at.line}, column ${at.column})` : ''}; fix it or remove it`);
  }
  if (!isObject(parsed)) throw new UsageError(`${path} should hold a JSON object`);
  return parsed;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What JSON holds, named as a message says it (never the value itself). */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : typeof value === 'string' ? 'a text' : `a ${typeof value}`;
}

/** An error of a file's content: the file, the key and what is wrong (exit 2), with how to fix it (an editor, unless repair says a command). */
function contentError(path: string, key: string, problem: string, repair = 'fix it in an editor, or remove the file'): UsageError {
  return new UsageError(`${path}: ${key} ${problem}`, [], repair);
}

/** `--profile NAME`, the name quoted for the shell where it must be ('my prod'). */
export function profileOption(name: string): string {
  return `--profile ${shellWord(name)}`;
}

/** The commands that repair a wrong setting of a profile (named: the profile in use may be another): set it again, or remove it; a token, removed or stored again. */
function settingRepair(name: string, key: string): string {
  const flag = profileOption(name);
  if (key === 'token') return `convx auth logout ${flag} removes it, convx auth login ${flag} stores another`;
  return `convx config set ${key} VALUE ${flag}, or convx config unset ${key} ${flag}`;
}

/** The warnings of the wrong values a read left unused (ConfigRead): each of the profile in use with its fix, one line per other profile. */
function warnWrong(path: string, wrong: readonly (WrongSetting & { problem: string })[], used: string | undefined, warn: (message: string) => void): void {
  const others = new Map<string, string[]>();
  for (const w of wrong) {
    if (used === undefined || w.profile === used) warn(`${path}: profile "${w.profile}": ${w.key} ${w.problem}; left unused until it is fixed: ${settingRepair(w.profile, w.key)}`);
    else others.set(w.profile, [...(others.get(w.profile) ?? []), w.key]);
  }
  for (const [name, keys] of others) warn(`${path}: profile "${name}" holds wrong settings (${keys.join(', ')}), left unused: convx config list ${profileOption(name)}`);
}

/**
 * What a read found beside the values (readConfig), kept out of the ConfigFile a command changes and
 * writes back: where each profile's token was read from (config.json, left there by an older convx,
 * or credentials.json), the keys of config.json this convx does not know (kept as they are on a
 * write), and the setting a repair's read left out (Repair: its profile, undefined for
 * defaultProfile, and key).
 */
interface ReadFacts {
  tokenPlaces: Map<string, 'config.json' | 'credentials.json'>;
  other: Record<string, unknown>;
  aside?: { profile: string | undefined; key: ConfigKey };
  /** The wrong values a tolerant read left out of the profiles (ConfigRead), as stored, written back as they are. */
  wrong: WrongSetting[];
}
/** A profile's setting whose stored value is not what it should be (ConfigRead). */
export interface WrongSetting {
  profile: string;
  key: string;
  value: unknown;
}
const READ_FACTS = new WeakMap<ConfigFile, ReadFacts>();

/** Whether the file holds a value of key (in profile name, unless defaultProfile) that a repair's read left out as not what it should be. */
export function setAside(config: ConfigFile, name: string, key: ConfigKey): boolean {
  const aside = READ_FACTS.get(config)?.aside;
  return aside !== undefined && aside.key === key && (key === 'defaultProfile' || aside.profile === name);
}

/** The settings of profile name that a tolerant read left out as wrong (ConfigRead), as stored. */
export function wrongSettings(config: ConfigFile, name: string): WrongSetting[] {
  return (READ_FACTS.get(config)?.wrong ?? []).filter((w) => w.profile === name);
}

/** Drops the wrong stored values of these keys of profile name (wrongSettings): a change that answers them writes what it answers, an empty answer included, not them. */
export function replaceWrongSettings(config: ConfigFile, name: string, keys: readonly string[]): void {
  const facts = READ_FACTS.get(config);
  if (facts) facts.wrong = facts.wrong.filter((w) => w.profile !== name || !keys.includes(w.key));
}

/** Where the token of a profile is stored: 'config.json' (an older convx's), 'credentials.json', or undefined. */
export function tokenLocation(config: ConfigFile, name: string): 'config.json' | 'credentials.json' | undefined {
  return READ_FACTS.get(config)?.tokenPlaces.get(name);
}

function emptyProfiles(): Record<string, Profile> {
  return Object.create(null) as Record<string, Profile>;
}

/**
 * config.json's profiles, each value checked; unknown keys warned about and kept; a repair's key,
 * where it is wrong, left out in its profile (aside); any other wrong value an error where it
 * stops the command (ConfigRead: strict, its profile), else left out (wrong).
 */
function checkedProfiles(
  path: string,
  raw: unknown,
  warn: (message: string) => void,
  { strict, repair, aside, wrong }: { strict: (name: string) => boolean; repair?: { key: ConfigKey; profile: string }; aside: () => void; wrong: (WrongSetting & { problem: string })[] },
): Record<string, Profile> {
  const profiles = emptyProfiles();
  if (raw === undefined) return profiles;
  if (!isObject(raw)) throw contentError(path, 'profiles', `should be an object of profiles by name, and is ${kindOf(raw)}`);
  for (const name of Object.keys(raw)) {
    const nameProblem = profileNameProblem(name);
    if (nameProblem) throw contentError(path, `the profile name "${name}"`, nameProblem);
    const entry = raw[name];
    if (!isObject(entry)) throw contentError(path, `profile "${name}"`, `should be an object of settings, and is ${kindOf(entry)}`);
    const profile: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(entry)) {
      const known = (PROFILE_KEYS as readonly string[]).includes(key) || key === 'token';
      if (!known) {
        warn(`${path}: profile "${name}" has an unknown setting "${key}", ignored (settings: ${PROFILE_KEYS.join(', ')})`);
        profile[key] = value;
        continue;
      }
      const problem =
        typeof value !== 'string' ? `should be a text, and is ${kindOf(value)}` : key === 'token' ? (value === '' ? 'is empty' : undefined) : settingProblem(key as ProfileKey, value);
      if (!problem) profile[key] = value;
      else if (repair?.key === key && repair.profile === name) aside();
      else if (strict(name)) throw contentError(path, `profile "${name}": ${key}`, problem, `fix it: ${settingRepair(name, key)} (or in an editor)`);
      else wrong.push({ profile: name, key, value, problem });
    }
    profiles[name] = profile as Profile;
  }
  return profiles;
}

/** config.json as it is: its default profile, its profiles (a token an older convx left among them), the keys it does not know, and the wrong values left out (ConfigRead). */
function readConfigJson(
  path: string,
  warn: (message: string) => void,
  { tolerant = false, repair, inUse }: ConfigRead,
): {
  defaultProfile?: string;
  profiles: Record<string, Profile>;
  other: Record<string, unknown>;
  aside?: { profile: string | undefined; key: ConfigKey };
  wrong: (WrongSetting & { problem: string })[];
  used?: string;
  strict: (name: string) => boolean;
} {
  const file = readJsonObject(path) ?? {};
  const other: Record<string, unknown> = {};
  for (const key of Object.keys(file)) {
    if (key !== 'defaultProfile' && key !== 'profiles') {
      warn(`${path}: unknown key "${key}", ignored (the file holds defaultProfile and profiles)`);
      other[key] = file[key];
    }
  }
  let named: string | undefined;
  let aside: { profile: string | undefined; key: ConfigKey } | undefined;
  const { defaultProfile } = file;
  if (defaultProfile !== undefined) {
    const problem = typeof defaultProfile !== 'string' ? `should be a profile's name, and is ${kindOf(defaultProfile)}` : profileNameProblem(defaultProfile);
    if (!problem) named = defaultProfile as string;
    else if (repair?.key === 'defaultProfile') aside = { profile: undefined, key: 'defaultProfile' };
    else throw contentError(path, 'defaultProfile', problem, 'fix it: convx config set defaultProfile NAME, or convx config unset defaultProfile (or in an editor)');
  }
  const changed = repair && repair.key !== 'defaultProfile' ? { key: repair.key, profile: repair.profile(named) } : undefined;
  const used = changed?.profile ?? inUse?.(named);
  const wrong: (WrongSetting & { problem: string })[] = [];
  // whether a wrong value of a profile stops the command; a read that knows no profile in use (none asked) is strict on all of them
  const strict = (name: string) => !tolerant && repair === undefined && (used === undefined || name === used);
  const profiles = checkedProfiles(path, file.profiles, warn, {
    strict,
    ...(changed ? { repair: changed } : {}),
    aside: () => (aside = { profile: changed!.profile, key: changed!.key }),
    wrong,
  });
  return { ...(named !== undefined ? { defaultProfile: named } : {}), profiles, other, wrong, strict, ...(aside ? { aside } : {}), ...(used !== undefined ? { used } : {}) };
}

/**
 * credentials.json's tokens by profile; its shape checked, no value of it ever in a message. A
 * wrong token (empty, or no text) is an error where it stops the command (strict, its profile),
 * else left out (wrong): a write, which writes the file from the profiles' tokens, drops it.
 */
function readCredentials(path: string, strict: (name: string) => boolean, wrong: (WrongSetting & { problem: string })[]): Map<string, string> {
  const file = readJsonObject(path) ?? {};
  const tokens = new Map<string, string>();
  for (const key of Object.keys(file)) if (key !== 'profiles') throw contentError(path, `"${key}"`, 'is not a key of the credentials file (it holds profiles)');
  const profiles = file.profiles ?? {};
  if (!isObject(profiles)) throw contentError(path, 'profiles', `should be an object of tokens by profile, and is ${kindOf(profiles)}`);
  for (const name of Object.keys(profiles)) {
    const nameProblem = profileNameProblem(name);
    if (nameProblem) throw contentError(path, `the profile name "${name}"`, nameProblem);
    const entry = profiles[name];
    if (!isObject(entry) || Object.keys(entry).some((k) => k !== 'token')) throw contentError(path, `profile "${name}"`, 'should be an object holding a token only');
    if (entry.token === undefined) continue;
    if (typeof entry.token !== 'string' || entry.token === '') {
      const problem = `should be a non-empty text, and is ${entry.token === '' ? 'empty' : kindOf(entry.token)}`;
      if (strict(name)) throw contentError(path, `profile "${name}": token`, problem, `fix it: ${settingRepair(name, 'token')} (or in an editor)`);
      wrong.push({ profile: name, key: 'token', value: undefined, problem });
      continue;
    }
    tokens.set(name, entry.token);
  }
  return tokens;
}

/**
 * The config with each profile's token merged in from the credentials file (a token still found
 * in config.json, written by an older convx, is read too and moves to the credentials file on the
 * next write). A file that is not what it should be is an error naming it, the key and what is
 * wrong (exit 2); unknown keys are a warning (warn), kept on a write.
 */
export function readConfig(path: string | undefined, warn: (message: string) => void = () => undefined, read: ConfigRead = {}): ConfigFile {
  const config: ConfigFile = { profiles: emptyProfiles() };
  if (!path) return config;
  const file = readConfigJson(path, warn, read);
  const places = new Map<string, 'config.json' | 'credentials.json'>();
  for (const [name, profile] of Object.entries(file.profiles)) {
    config.profiles[name] = { ...profile };
    if (profile.token) places.set(name, 'config.json');
  }
  const secrets = credentialsPath(path);
  const wrongTokens: (WrongSetting & { problem: string })[] = [];
  for (const [name, token] of readCredentials(secrets, file.strict, wrongTokens)) {
    config.profiles[name] = { ...config.profiles[name], token };
    places.set(name, 'credentials.json');
  }
  warnWrong(path, file.wrong, file.used, warn);
  warnWrong(secrets, wrongTokens, file.used, warn);
  if (file.defaultProfile !== undefined) config.defaultProfile = file.defaultProfile;
  const wrong = [...file.wrong, ...wrongTokens].map(({ profile, key, value }) => ({ profile, key, value }));
  READ_FACTS.set(config, { tokenPlaces: places, other: file.other, wrong, ...(file.aside ? { aside: file.aside } : {}) });
  return config;
}

/**
 * Changes the config under its lock: read again (another convx may have written it meanwhile),
 * changed by update, and written whole. The way to change it: no change of another convx is lost.
 * The read is tolerant (ConfigRead: only the commands that set the config up write it, and their
 * own read was), its warnings said by that read already. repair: the read of `convx config
 * set|unset KEY` (Repair), which replaces or removes that value.
 */
export function updateConfig(path: string, update: (config: ConfigFile) => void, waitMs = LOCK_WAIT_MS, repair?: Repair): ConfigFile {
  ensureFolder(dirname(path));
  return withLock(path, waitMs, () => {
    const config = readConfig(path, undefined, { tolerant: true, ...(repair ? { repair } : {}) });
    update(config);
    writeFiles(path, config, READ_FACTS.get(config));
    return config;
  });
}

/**
 * Both files written whole, the credentials first; config.json's settings in one order, unknown keys
 * after them; a wrong value the read left out (ReadFacts.wrong) back as it was, where its profile is
 * still there and the change did not set its key (a wrong token, empty or no text, goes).
 */
function writeFiles(path: string, config: ConfigFile, facts: ReadFacts | undefined): void {
  const tokens: Record<string, { token: string }> = {};
  const profiles: Record<string, Profile> = {};
  for (const name of Object.keys(config.profiles)) {
    if (profileNameProblem(name)) throw new UsageError(`the profile name "${name}" ${profileNameProblem(name)}`);
    const { token, ...set } = config.profiles[name]!;
    // a wrong token (empty, or no text: nothing a header could carry) is not kept
    const kept = (facts?.wrong ?? []).filter((w) => w.profile === name && w.key !== 'token');
    const rest: Record<string, unknown> = { ...Object.fromEntries(kept.map((w) => [w.key, w.value])), ...set };
    const ordered: Record<string, unknown> = {};
    for (const key of PROFILE_KEYS) if (rest[key] !== undefined) ordered[key] = rest[key];
    Object.defineProperty(profiles, name, { value: { ...ordered, ...rest }, enumerable: true, writable: true, configurable: true });
    if (token) Object.defineProperty(tokens, name, { value: { token }, enumerable: true, writable: true, configurable: true });
  }
  const secrets = credentialsPath(path);
  if (Object.keys(tokens).length) writeWhole(secrets, `${JSON.stringify({ profiles: tokens }, null, 2)}\n`);
  else removeFile(secrets);
  const file = { ...(config.defaultProfile ? { defaultProfile: config.defaultProfile } : {}), profiles, ...facts?.other };
  writeWhole(path, `${JSON.stringify(file, null, 2)}\n`);
}

function removeFile(path: string): void {
  try {
    rmSync(writtenTarget(path), { force: true });
  } catch (error) {
    throw pathError('remove', path, error);
  }
}

/** The file a write of path replaces: path, or the target of the symbolic link path is (followed to its end, a dotfiles link kept). */
function writtenTarget(path: string): string {
  let current = path;
  for (let hops = 0; hops < 40; hops++) {
    let isLink: boolean;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return current;
      throw pathError('write', path, error);
    }
    if (!isLink) return current;
    current = resolve(dirname(current), readlinkSync(current));
  }
  throw pathError('write', path, Object.assign(new Error('ELOOP'), { code: 'ELOOP' }));
}

/** A process's temporary files are told apart by its pid and a random token (two containers may both run pid 1). */
const RUN = randomBytes(4).toString('hex');

/** Writes a file whole: a temporary file beside it (0600) renamed over it; a symbolic link's target replaced, the link kept. */
function writeWhole(path: string, content: string): void {
  const target = writtenTarget(path);
  const temporary = `${target}.${process.pid}.${RUN}.tmp`;
  try {
    writeFileSync(temporary, content, { mode: 0o600, flag: 'wx' });
    chmodSync(temporary, 0o600);
    renameSync(temporary, target);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw pathError('write', path, error);
  }
}

/**
 * Makes the config folder (0700) and the folders above it, one level at a time (Node's recursive
 * mkdir loops forever where a parent cannot be made, as under /proc/self), and keeps it 0700.
 */
function ensureFolder(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; missing.length < 64; at = dirname(at)) {
    let stat;
    try {
      stat = statSync(at);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw pathError('make the folder', dir, error);
      missing.unshift(at);
      if (dirname(at) === at) break;
      continue;
    }
    if (!stat.isDirectory()) throw pathError('make the folder', dir, Object.assign(new Error('ENOTDIR'), { code: 'ENOTDIR' }));
    break;
  }
  for (const folder of missing) {
    try {
      mkdirSync(folder, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw pathError('make the folder', folder, error);
    }
  }
  try {
    if ((statSync(dir).mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  } catch (error) {
    throw pathError('keep private (mode 0700) the folder', dir, error);
  }
}

/** How long a write waits for another convx's lock, and how old a lock without an owner must be to be taken as left behind. */
export const LOCK_WAIT_MS = 5000;
const UNOWNED_LOCK_MS = 10_000;
/**
 * How old a lock naming this process's own pid (on this host) but another token must be to be taken
 * as left behind: an earlier process's of the same pid (convx as pid 1 of a container with a fixed
 * hostname, restarted), which alive() cannot tell from this one. Not at once: a twin container
 * (the same pid and hostname, sharing the folder) holds its lock for milliseconds.
 */
const OWN_PID_LOCK_MS = 1000;
/** The takeover lock is held for a read and an unlink; one older than this was left by a process stopped there. */
const TAKEOVER_LOCK_MS = 2000;
/** How old a temporary file (*.tmp) or an older convx's *.stale beside the files must be to be removed as left behind, under the lock. */
const LEFTOVER_MS = 60_000;

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The owner a lock file names (pid, host and token), or undefined where it names none. */
function lockOwner(text: string | undefined): { pid: number; host: string; token: string } | undefined {
  const [pid, host, token] = (text ?? '').split('\n');
  return pid && /^\d+$/.test(pid) && host !== undefined && token ? { pid: Number(pid), host, token } : undefined;
}

/** A lock file as read: its text and age (ms); undefined where it is gone or cannot be read. */
interface LockFile {
  text: string;
  age: number;
}

function readLock(path: string): LockFile | undefined {
  try {
    return { text: readFileSync(path, 'utf8'), age: Date.now() - statSync(path).mtimeMs };
  } catch {
    return undefined;
  }
}

/**
 * Whether a lock was left behind: its process, of this machine, is gone (or it names this process's
 * pid and is not this process's, OWN_PID_LOCK_MS); or it names no owner and is old.
 */
function leftBehind(lock: LockFile, token: string): boolean {
  const owner = lockOwner(lock.text);
  if (!owner) return lock.age > UNOWNED_LOCK_MS;
  if (owner.host !== hostname()) return false;
  if (owner.pid === process.pid) return lock.text !== token && lock.age > OWN_PID_LOCK_MS;
  return !alive(owner.pid);
}

/** leftBehind of the lock file at path, told to a test (LOCK_STEPS). */
function judge(path: string, lock: LockFile, token: string): boolean {
  const result = leftBehind(lock, token);
  LOCK_STEPS.judged?.(path, lock.text, result);
  return result;
}

/**
 * Where a test steps in between the lock's moves, as another process would (test/config-lock.test.ts):
 * judged, each time the lock file (path, its text) has been judged left behind or not, before anything
 * is done about it (in a takeover, under the takeover lock); written, once a lock file made has its
 * token written (a throw: a write that failed, as on a full disk).
 */
export const LOCK_STEPS: { judged?: (path: string, text: string, leftBehind: boolean) => void; written?: (path: string) => void } = {};

/**
 * Creates the lock file path holding token (O_EXCL): false where it exists. A token that cannot be
 * written removes the file made (it would else be a lock without an owner for UNOWNED_LOCK_MS).
 */
function createLock(path: string, token: string, configFile: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw pathError('lock', configFile, error);
  }
  try {
    writeSync(fd, token);
    LOCK_STEPS.written?.(path);
  } catch (error) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw pathError('lock', configFile, error);
  }
  closeSync(fd);
  return true;
}

/**
 * Removes the lock file path if it still holds text. Between the read and the unlink, another
 * process could replace the file only by taking it over, which it does only where it judges the
 * owner gone (or a takeover lock stale, older than TAKEOVER_LOCK_MS): a window only a process stopped
 * that long, or a twin of the same pid and host (OWN_PID_LOCK_MS), could meet.
 */
function removeIfStill(path: string, text: string): void {
  try {
    if (readFileSync(path, 'utf8') === text) rmSync(path, { force: true });
  } catch {
    // gone already
  }
}

/**
 * Removes a lock judged left behind (its text judged), and only that one: under a second lock
 * (config.json.lock.takeover, O_EXCL; one older than TAKEOVER_LOCK_MS, or whose process is gone, is
 * removed), the lock is read again and removed only where it is still the one judged and still left
 * behind. No other process removes a lock meanwhile: its owner is gone and every other takeover waits
 * for this one, so the file removed is the file checked; a live lock is never moved or removed.
 * True where something changed (the lock, or a stale takeover lock, removed; or the lock another
 * than judged): the caller tries O_EXCL again at once; else it waits as for a live lock.
 */
function takeOver(path: string, judged: string, token: string, configFile: string): boolean {
  const guard = `${path}.takeover`;
  if (!createLock(guard, token, configFile)) {
    const held = readLock(guard);
    if (!held || !(held.age > TAKEOVER_LOCK_MS || leftBehind(held, token))) return held === undefined;
    removeIfStill(guard, held.text);
    return true;
  }
  try {
    const now = readLock(path);
    if (now === undefined || now.text !== judged) return true;
    if (!judge(path, now, token)) return false; // its pid runs again: a live lock now
    rmSync(path, { force: true });
    return true;
  } finally {
    removeIfStill(guard, token);
  }
}

/**
 * Removes the temporary files (`NAME.PID.TOKEN.tmp`) a killed process left beside a config file and
 * its target, and an older convx's `config.json.lock.PID.TOKEN.stale`, once LEFTOVER_MS old: run
 * holding the lock, under which alone they are written.
 */
function removeLeftovers(configFile: string): void {
  let places: Set<string>;
  try {
    places = new Set([configFile, credentialsPath(configFile)].flatMap((file) => [file, writtenTarget(file)]));
  } catch {
    return; // a link that cannot be followed: the write says so
  }
  const folders = new Map<string, string[]>();
  for (const file of places) folders.set(dirname(file), [...(folders.get(dirname(file)) ?? []), basename(file)]);
  folders.get(dirname(configFile))?.push(basename(lockPath(configFile)));
  for (const [folder, names] of folders) {
    let entries: string[];
    try {
      entries = readdirSync(folder);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const leftover = names.some((name) => entry.startsWith(`${name}.`) && /^\.\d+\.[0-9a-f]+\.(tmp|stale)$/.test(entry.slice(name.length)));
      if (!leftover) continue;
      try {
        if (Date.now() - lstatSync(join(folder, entry)).mtimeMs > LEFTOVER_MS) rmSync(join(folder, entry), { force: true });
      } catch {
        // gone already, or not ours to remove: left
      }
    }
  }
}

/** Runs work holding the config's lock (config.json.lock, made with O_EXCL), waiting up to waitMs for another convx. */
function withLock<T>(configFile: string, waitMs: number, work: () => T): T {
  const path = lockPath(configFile);
  const token = `${process.pid}\n${hostname()}\n${RUN}${randomBytes(4).toString('hex')}\n`;
  const started = Date.now();
  for (let attempt = 0; !createLock(path, token, configFile); attempt++) {
    const held = readLock(path);
    if (held && judge(path, held, token) && takeOver(path, held.text, token, configFile)) continue;
    if (Date.now() - started >= waitMs) {
      const owner = lockOwner(held?.text);
      const waited = waitMs >= 1000 ? `${Math.round(waitMs / 1000)} s` : `${waitMs} ms`;
      throw new ConvxError(
        `cannot change ${configFile}: another convx${owner ? ` (pid ${owner.pid}${owner.host === hostname() ? '' : ` on ${owner.host}`})` : ''} has held its lock ${path} for ${waited}`,
        ExitCode.usage,
        `run the command again once it is done; if no convx is running, remove ${path}`,
      );
    }
    sleep(Math.min(5 + attempt * 5, 50));
  }
  try {
    removeLeftovers(configFile);
    return work();
  } finally {
    // ours only: a lock taken over meanwhile (removeIfStill's window) is another's
    removeIfStill(path, token);
  }
}
