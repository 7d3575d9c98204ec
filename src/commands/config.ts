/**
 * `convx config get|set|unset|list` and `convx config profiles`: the settings of
 * a profile in config.json. Tokens are not settings: `convx auth login` stores
 * them, in the 0600 credentials file only.
 */
import { existsSync } from 'node:fs';
import { TRACKING_DOMAIN, TRACKING_PARAM } from '../model/validation.js';
import { checkApiUrl, CONFIG_KEYS, maskToken, PROFILE_KEYS, profileFlag, profileName, redactUrl, setAside, SETTING_CHECKS, settingKey, settingProblem, tokenLocation, updateConfig, wrongSettings, type ConfigFile, type ConfigKey, type Profile, type ProfileKey, type Repair } from '../config.js';
import type { Context } from '../context.js';
import { NotFoundError, UsageError } from '../errors.js';
import { canonicalZone, zoneProblem } from '../model/period.js';
import type { RecordKind } from '../output/writer.js';
import { saveProfile } from './auth.js';
import { defineHandler } from './registry.js';

/** The keys `convx config` takes: a profile's settings, and defaultProfile (the file's, not a profile's). */
export type { ConfigKey };

const SECRET_HINT = 'tokens are kept apart, in the 0600 credentials file';

/** Accepts the file's spelling (deliveryApi) and the flag's (delivery-api), in any case. */
function configKey(typed: string | undefined, verb: string): ConfigKey {
  if ((typed ?? '').toLowerCase().replaceAll(/[-_]/g, '') === 'token') {
    const how = verb === 'unset' ? '`convx auth logout`' : verb === 'get' ? '`convx auth status` (it shows it masked)' : '`convx auth login`';
    throw new UsageError(`config ${verb}: the token is not a config setting (${SECRET_HINT}); use ${how}`);
  }
  const key = settingKey(typed ?? '');
  if (!key) throw new UsageError(`config ${verb}: "${typed ?? ''}" is not a setting; settings: ${CONFIG_KEYS.join(', ')}`);
  return key;
}

/**
 * A setting's value as it is stored, or a UsageError saying what is wrong with it: the one check of
 * `convx config set` and of what `convx init` asks (source names where the value came from). The
 * value as it will be stored (a URL without its trailing slashes, say) passes the file's own check
 * (settingProblem) too, so that what is written is always read back.
 */
export function checkedSetting(ctx: Context, key: ConfigKey, value: string, source = `config set ${key}`): string {
  const stored = storedSetting(ctx, key, value, source);
  const problem = settingProblem(key, stored);
  if (problem) throw new UsageError(`${source}: "${value}" ${problem}`);
  return stored;
}

/** A setting's value as it is stored (checkedSetting), refused with the words of its key. */
function storedSetting(ctx: Context, key: ConfigKey, value: string, source: string): string {
  // What is wrong with a value, in the words config.json's own check uses (SETTING_CHECKS, config-file.ts).
  const problem = (k: ProfileKey & keyof typeof SETTING_CHECKS) => SETTING_CHECKS[k](value);
  switch (key) {
    case 'mode':
      if (problem(key)) throw new UsageError(`${source}: "${value}" ${problem(key)}`);
      return value;
    case 'format':
      if (problem(key)) {
        const perCommand = ['markdown', 'html'].includes(value.toLowerCase());
        throw new UsageError(
          `${source}: "${value}" ${problem(key)}`,
          [],
          perCommand ? `${value.toLowerCase()} is not a default every command can print: give it per command, e.g. convx report -o ${value.toLowerCase()}` : undefined,
        );
      }
      return value;
    case 'api':
    case 'deliveryApi':
      // A password is never stored: refused before anything is written, and not echoed.
      checkApiUrl(value, source);
      if (problem(key)) throw new UsageError(`${source}: "${value}" ${problem(key)}`);
      // stored without trailing slashes, and checked so by checkedSetting (http:/// is no URL left)
      return value.replace(/\/+$/, '');
    case 'data': {
      const path = ctx.resolvePath(value);
      if (!existsSync(path)) ctx.log.warn(`${path} does not exist (yet)`);
      return path;
    }
    case 'defaultProfile':
      if (!ctx.config.profiles[value]) {
        throw new UsageError(`${source}: no profile "${value}"; profiles: ${Object.keys(ctx.config.profiles).join(', ') || 'none'}`);
      }
      return value;
    case 'plugin':
      return value;
    case 'trackingDomains':
    case 'trackingParams': {
      const pattern = key === 'trackingDomains' ? TRACKING_DOMAIN : TRACKING_PARAM;
      const items = value.split(',').map((v) => (key === 'trackingDomains' ? v.trim().toLowerCase() : v.trim()));
      const wrong = items.find((v) => !pattern.test(v));
      if (wrong !== undefined) throw new UsageError(`${source}: "${wrong}" is not ${key === 'trackingDomains' ? 'a domain name' : 'a query parameter name'}`);
      return items.join(',');
    }
    case 'tz': {
      // Stored in its canonical spelling; refused with the parser's words when it is no zone.
      const problem = zoneProblem(value);
      if (problem !== undefined) throw new UsageError(`${source}: ${problem}`);
      return canonicalZone(value)!;
    }
  }
}

function requireFile(ctx: Context): string {
  if (!ctx.configFile) throw new UsageError('cannot tell where the config file goes: set XDG_CONFIG_HOME or HOME');
  return ctx.configFile;
}

/**
 * The profile's settings in the order of CONFIG_KEYS (a wrong one as stored, which the read warned
 * about: config-file.ts, ConfigRead), with the token masked when one is stored, and where it is.
 */
function shownSettings(ctx: Context, name: string, profile: Profile): [string, string][] {
  const wrong = new Map(wrongSettings(ctx.config, name).map((w) => [w.key, storedText(w.value)]));
  const value = (k: ProfileKey) => (wrong.has(k) ? wrong.get(k) : profile[k] !== undefined && profile[k] !== '' ? profile[k] : undefined);
  const rows: [string, string][] = PROFILE_KEYS.filter((k) => value(k) !== undefined).map((k) => [k, shown(k, value(k)!)]);
  if (profile.token) {
    const where = tokenLocation(ctx.config, name) === 'config.json' ? 'in config.json, left there by an older convx (the next change moves it to the credentials file)' : 'in the credentials file';
    rows.push(['token', `${maskToken(profile.token)}, ${where}`]);
  }
  return rows;
}

/** A stored value as text: a text as it is, anything else (a wrong value: a number, a list) as JSON writes it. */
function storedText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A setting as printed: a URL's password (in a profile written by hand or by an older convx) redacted. */
function shown(key: string, value: string): string {
  return key === 'api' || key === 'deliveryApi' ? redactUrl(value) : value;
}

export const configGet = defineHandler<Record<string, never>>({
  async run(ctx, args) {
    const key = configKey(args[0], 'get');
    const name = ctx.settings.profile;
    // a wrong stored value (warned about as read: config-file.ts, ConfigRead) is printed as it is stored
    const wrong = wrongSettings(ctx.config, name).find((w) => w.key === key);
    if (wrong) {
      await ctx.output.text(`${shown(key, storedText(wrong.value))}\n`);
      return;
    }
    const value = key === 'defaultProfile' ? ctx.config.defaultProfile : ctx.config.profiles[name]?.[key];
    if (value === undefined || value === '') {
      throw new NotFoundError(
        key === 'defaultProfile' ? 'defaultProfile is not set (commands use "default")' : `${key} is not set in profile "${name}"`,
        `set it with: convx config set ${key} VALUE${key === 'defaultProfile' ? '' : profileFlag(name, ctx.io.env, ctx.config)}`,
      );
    }
    await ctx.output.text(`${shown(key, value)}\n`);
  },
});

export const configSet = defineHandler<Record<string, never>>({
  async run(ctx, args) {
    const key = configKey(args[0], 'set');
    if (args[1] === undefined) throw new UsageError(`config set ${key}: give the value too, e.g. convx config set ${key} ${example(key)}`);
    const value = checkedSetting(ctx, key, args[1]);
    const name = ctx.settings.profile;
    const file = requireFile(ctx);
    if (key === 'defaultProfile') {
      saveFile(
        ctx,
        (config) => {
          config.defaultProfile = value;
        },
        repairOf(key, name),
      );
      ctx.log.info(`defaultProfile = ${value} (in ${file})`);
      return;
    }
    let note = '';
    const flag = profileFlag(name, ctx.io.env, ctx.config);
    saveProfile(ctx, name, (profile) => {
      const next: Profile = { ...profile, [key]: value };
      // A dataset or an API names the mode, as --data and --api do.
      if (key === 'data' && profile.mode !== 'local') {
        next.mode = 'local';
        if (profile.api) note = `; mode is now local (its api stays, unused until: convx config set mode api${flag})`;
      }
      if (key === 'api' && profile.mode !== 'api') {
        next.mode = 'api';
        if (profile.data) note = `; mode is now api (its data stays, unused until: convx config set mode local${flag})`;
      }
      if (key === 'mode' && value === 'api' && !profile.api) note = `; it has no api yet: convx config set api URL${flag}`;
      if (key === 'mode' && value === 'local' && !profile.data) note = `; it has no dataset yet: convx config set data DIR${flag}`;
      return next;
    }, { repair: repairOf(key, name) });
    ctx.log.info(`profile "${name}": ${key} = ${key === 'api' || key === 'deliveryApi' ? redactUrl(value) : value} (in ${file})${note}`);
  },
});

export const configUnset = defineHandler<Record<string, never>>({
  async run(ctx, args) {
    const key = configKey(args[0], 'unset');
    const name = ctx.settings.profile;
    if (key === 'defaultProfile') {
      if (ctx.config.defaultProfile === undefined && !setAside(ctx.config, name, key)) {
        ctx.log.info('defaultProfile was not set');
        return;
      }
      saveFile(
        ctx,
        (config) => {
          delete config.defaultProfile;
        },
        repairOf(key, name),
      );
      ctx.log.info('removed defaultProfile (commands use "default" unless --profile or CONVX_PROFILE say otherwise)');
      return;
    }
    if (ctx.config.profiles[name]?.[key] === undefined && !setAside(ctx.config, name, key)) {
      ctx.log.info(`${key} was not set in profile "${name}"`);
      return;
    }
    saveProfile(ctx, name, ({ [key]: _dropped, ...rest }) => rest, { repair: repairOf(key, name) });
    ctx.log.info(`profile "${name}": removed ${key}`);
  },
});

export const configList = defineHandler<Record<string, never>>({
  async run(ctx) {
    const name = ctx.settings.profile;
    const profile = (Object.hasOwn(ctx.config.profiles, name) ? ctx.config.profiles[name] : undefined) ?? {};
    const rows = shownSettings(ctx, name, profile);
    if (explicitJson(ctx)) {
      // a wrong value that is no text as it is stored (5, null, a list), not as text
      const raw = new Map(wrongSettings(ctx.config, name).filter((w) => typeof w.value !== 'string').map((w) => [w.key, w.value]));
      await ctx.output.json({ profile: name, ...Object.fromEntries(rows.map(([k, v]) => [k, k === 'token' ? maskToken(profile.token!) : raw.has(k) ? raw.get(k) : v])) });
      return;
    }
    if (rows.length === 0) {
      ctx.log.info(`profile "${name}" has no settings${ctx.config.profiles[name] ? '' : ' (it does not exist yet)'}; try: convx config set data DIR, or convx init`);
      return;
    }
    ctx.log.info(`profile "${name}" (${ctx.configFile})`);
    await ctx.output.text(rows.map(([k, v]) => `${k}=${v}\n`).join(''));
  },
});

export const configProfiles = defineHandler<Record<string, never>>({
  async run(ctx) {
    const config = ctx.config;
    const active = ctx.settings.profile;
    const fallback = profileName(undefined, {}, config);
    const names = Object.keys(config.profiles).sort();
    const entries = names.map((n) => {
      const p = config.profiles[n]!;
      const mode = p.mode ?? (p.api && !p.data ? 'api' : p.data ? 'local' : undefined);
      return {
        name: n,
        default: n === fallback,
        active: n === active,
        mode: mode ?? null,
        target: (mode === 'api' ? (p.api === undefined ? undefined : redactUrl(p.api)) : p.data) ?? null,
        format: p.format ?? null,
        plugin: p.plugin ?? null,
        token: Boolean(p.token),
      };
    });
    if (ctx.globals.format !== undefined && ctx.globals.format !== 'table') {
      // records as -o prints records (docs/formats.md): json one list, jsonl one a line, csv and tsv rows under a header
      await ctx.output.document(PROFILE_RECORD, entries, (records) => records);
      return;
    }
    if (entries.length === 0) {
      ctx.log.info(`no profiles yet${ctx.configFile ? ` in ${ctx.configFile}` : ''}; create one with: convx init, or convx config set data DIR`);
      return;
    }
    const width = Math.max(...entries.map((e) => e.name.length));
    const modeWidth = Math.max(...entries.map((e) => (e.mode ?? '-').length));
    const lines = entries.map((e) => {
      const notes = [e.default ? 'default' : '', e.token ? (tokenLocation(config, e.name) === 'config.json' ? 'token in config.json, from an older convx' : 'token stored') : '', e.format ? `format ${e.format}` : '', e.plugin ? `plugin ${e.plugin}` : '']
        .filter(Boolean)
        .join(', ');
      return `${e.active ? '*' : ' '} ${e.name.padEnd(width)}  ${(e.mode ?? '-').padEnd(modeWidth)}  ${e.target ?? '-'}${notes ? `  (${notes})` : ''}`.trimEnd();
    });
    await ctx.output.text(`${lines.join('\n')}\n`);
    ctx.log.info('* the profile commands use now (--profile, else CONVX_PROFILE, else defaultProfile, else "default")');
  },
});

/** The records of `config profiles -o json|jsonl|csv|tsv`: a profile's line of the listing. */
const PROFILE_COLUMNS = ['name', 'default', 'active', 'mode', 'target', 'format', 'plugin', 'token'];
const PROFILE_RECORD: RecordKind = { columns: PROFILE_COLUMNS, tableColumns: PROFILE_COLUMNS, objectFields: [] };

/** JSON only when -o asks for it: a profile's default format is for reports, not for these listings. */
export function explicitJson(ctx: Context): boolean {
  return ctx.globals.format === 'json' || ctx.globals.format === 'jsonl';
}

function example(key: ConfigKey): string {
  return { mode: 'local', data: 'samples/shop', api: 'https://host/v1', deliveryApi: 'https://host/v4', plugin: 'shop', format: 'csv', tz: 'Europe/Prague', trackingDomains: 'shop.example.com', trackingParams: 'utm_source,utm_medium,utm_campaign', defaultProfile: 'default' }[key];
}

/** Changes the file under its lock, as it is now (another convx may have written it): updateConfig. */
function saveFile(ctx: Context, update: (config: ConfigFile) => void, repair: Repair): void {
  updateConfig(requireFile(ctx), update, undefined, repair);
}

/** The read of a command that replaces or removes key of profile name: a wrong stored value of it does not stop it (as the context read it, createContext). */
function repairOf(key: ConfigKey, name: string): Repair {
  return { key, profile: () => name };
}
