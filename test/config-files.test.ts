/**
 * The config files as convx reads and writes them: every change under a lock, read again and
 * written whole (no change of another convx lost, a symbolic link written through); each file's
 * shape and values checked as read, never quoting credentials.json; the profile named by
 * --profile, CONVX_PROFILE or defaultProfile; `convx config` working whatever the mode's state;
 * where the files go and what the file system's failures say. In process, a scratch config home
 * per test.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonErrorAt, LOCK_WAIT_MS, lockPath, updateConfig } from '../src/config-file.js';
import { ConvxError } from '../src/errors.js';
import { cli, SAMPLES, tempDir } from './helpers.js';

const configFile = (home: string) => join(home, 'convx', 'config.json');
const credentialsFile = (home: string) => join(home, 'convx', 'credentials.json');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
const asRoot = process.getuid?.() === 0;

/** A scratch config home holding these files (config.json, credentials.json) as given. */
function home(files: { config?: unknown; credentials?: unknown } = {}): { home: string; env: Record<string, string> } {
  const dir = tempDir();
  mkdirSync(join(dir, 'convx'), { recursive: true, mode: 0o700 });
  const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
  if (files.config !== undefined) writeFileSync(configFile(dir), text(files.config), { mode: 0o600 });
  if (files.credentials !== undefined) writeFileSync(credentialsFile(dir), text(files.credentials), { mode: 0o600 });
  return { home: dir, env: { XDG_CONFIG_HOME: dir } };
}

describe('every change is read again and written under the lock', () => {
  it('a change reads the file again under the lock: a logout and a config set made one after the other both stay', () => {
    const { home: dir } = home({ config: { profiles: { lo: { mode: 'api', api: 'https://h/v1' } } }, credentials: { profiles: { lo: { token: 'tok-1234567890abcdef' } } } });
    const file = configFile(dir);
    updateConfig(file, (config) => void delete config.profiles.lo!.token);
    // written meanwhile by hand, as by another convx: the next change keeps it
    writeFileSync(file, JSON.stringify({ profiles: { ...readJson(file).profiles, q1: { plugin: 'q1' } } }));
    updateConfig(file, (config) => void (config.profiles.lo = { ...config.profiles.lo, plugin: 'p' }));
    expect(readJson(file).profiles).toEqual({ lo: { mode: 'api', api: 'https://h/v1', plugin: 'p' }, q1: { plugin: 'q1' } });
    // the token the logout removed is not written back by the change after it
    expect(existsSync(credentialsFile(dir))).toBe(false);
    expect(existsSync(lockPath(file))).toBe(false);
  });

  it('takes over a lock left by a process that is gone', async () => {
    const { home: dir, env } = home({ config: { profiles: {} } });
    const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const { hostname } = await import('node:os');
    writeFileSync(lockPath(configFile(dir)), `${gone}\n${hostname()}\nabc\n`);
    const set = await cli(['config', 'set', 'format', 'csv'], { env });
    expect(set.code, set.stderr).toBe(0);
    expect(readJson(configFile(dir)).profiles.default).toEqual({ format: 'csv' });
    expect(existsSync(lockPath(configFile(dir)))).toBe(false);
  });

  it('waits for a lock a running convx holds, then fails saying whose it is and what to do; writes nothing', async () => {
    const { home: dir } = home({ config: { profiles: {} } });
    const { hostname } = await import('node:os');
    const lock = lockPath(configFile(dir));
    writeFileSync(lock, `${process.pid}\n${hostname()}\nsomeone-else\n`);
    const started = Date.now();
    // a wait of its own (a command waits LOCK_WAIT_MS, 5 s)
    const error = (() => {
      try {
        updateConfig(configFile(dir), (config) => void (config.profiles.x = { format: 'csv' }), 300);
      } catch (e) {
        return e as ConvxError;
      }
    })();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(error).toBeInstanceOf(ConvxError);
    expect([error!.exitCode, error!.message, error!.hint]).toEqual([
      2,
      `cannot change ${configFile(dir)}: another convx (pid ${process.pid}) has held its lock ${lock} for 300 ms`,
      `run the command again once it is done; if no convx is running, remove ${lock}`,
    ]);
    expect(readJson(configFile(dir))).toEqual({ profiles: {} });
    expect(readFileSync(lock, 'utf8')).toContain('someone-else');
    expect(LOCK_WAIT_MS).toBe(5000);
  });

  it('writes through a symbolic link (dotfiles): the link stays, its target is replaced', async () => {
    const { home: dir, env } = home();
    const dotfiles = tempDir();
    writeFileSync(join(dotfiles, 'convx.json'), JSON.stringify({ profiles: { default: { format: 'json' } } }));
    symlinkSync(join(dotfiles, 'convx.json'), configFile(dir));
    expect((await cli(['config', 'set', 'plugin', 'shop'], { env })).code).toBe(0);
    expect(lstatSync(configFile(dir)).isSymbolicLink()).toBe(true);
    expect(readlinkSync(configFile(dir))).toBe(join(dotfiles, 'convx.json'));
    expect(readJson(join(dotfiles, 'convx.json')).profiles.default).toEqual({ plugin: 'shop', format: 'json' });
  });
});

describe('the files as read', () => {
  it('a broken credentials.json is named with where it breaks, never with its content', async () => {
    const token = 'sk_live_9f3c2a7b1d';
    const { home: dir, env } = home({ config: { profiles: { a: { mode: 'api', api: 'https://h/v1' } } }, credentials: `{"profiles":{"a":{"token":${token}"}}}` });
    for (const argv of [['config', 'list', '--profile', 'a'], ['auth', 'status', '--profile', 'a'], ['config', 'set', 'format', 'csv', '--profile', 'a']]) {
      const run = await cli(argv, { env });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`convx: error: ${credentialsFile(dir)} is not valid JSON (at line 1, column 27); fix it or remove it\n`);
      expect(run.stderr).not.toMatch(/sk_|live|9f3c/);
    }
    // a token that is no text, a key that is no token: the file and key named, no value
    const shapes = home({ config: { profiles: { a: { mode: 'local', data: SAMPLES } } }, credentials: { profiles: { a: { token: 123456789 } } } });
    const used = await cli(['report', '--month', '2024-03', '--profile', 'a'], { env: shapes.env });
    expect([used.code, used.stderr]).toEqual([2, expect.stringMatching(/credentials\.json: profile "a": token should be a non-empty text, and is a number\nhint: fix it: convx auth logout --profile a removes it/)]);
    // a warning of the config commands and of a command of another profile; auth logout removes it
    expect((await cli(['config', 'list', '--profile', 'a'], { env: shapes.env })).stderr).toMatch(/credentials\.json: profile "a": token should be a non-empty text, and is a number; left unused/);
    expect((await cli(['report', '--month', '2024-03', '--data', SAMPLES], { env: shapes.env })).stderr).toMatch(/^warning: .*credentials\.json: profile "a" holds wrong settings \(token\), left unused/);
    const logout = await cli(['auth', 'logout', '--profile', 'a'], { env: shapes.env });
    expect([logout.code, logout.stderr.split('\n').at(-2)]).toEqual([0, 'removed the unusable token of profile "a"']);
    expect(existsSync(credentialsFile(shapes.home))).toBe(false);
    expect((await cli(['report', '--month', '2024-03', '--profile', 'a'], { env: shapes.env })).code).toBe(0);
    const extra = home({ credentials: { profiles: { a: { token: 'sk_live_zzzzzzzz', secret: 'sk_live_yyyyyy' } } } });
    const run = await cli(['config', 'list'], { env: extra.env });
    expect(run.stderr).toMatch(/credentials\.json: profile "a" should be an object holding a token only\n/);
    expect(run.stderr).not.toContain('sk_live');
  });

  it('a hand-edited config.json: bad values fail (exit 2) naming the file, the key and what is wrong; unknown keys are a warning', async () => {
    // a wrong setting of a profile: its commands fix it, and the commands that set the config up run on
    const settings: [unknown, RegExp, string][] = [
      [{ profiles: { default: { format: 'xml' } } }, /profile "default": format is not one of table, json, jsonl, csv, tsv/, 'format'],
      [{ profiles: { default: { mode: 'lcoal' } } }, /profile "default": mode is not one of local, api/, 'mode'],
      [{ profiles: { default: { data: 123 } } }, /profile "default": data should be a text, and is a number/, 'data'],
      [{ profiles: { default: { tz: 7 } } }, /profile "default": tz should be a text, and is a number/, 'tz'],
      [{ profiles: { default: { tz: 'Mars/Base' } } }, /profile "default": tz is not an IANA time zone name/, 'tz'],
      [{ profiles: { default: { api: 'ftp://h' } } }, /profile "default": api is not an http\(s\) URL/, 'api'],
      // one that no URL parser takes, as the API client would not
      [{ profiles: { default: { api: 'http:///' } } }, /profile "default": api is not an http\(s\) URL/, 'api'],
      [{ profiles: { default: { plugin: '' } } }, /profile "default": plugin is empty/, 'plugin'],
    ];
    // a file of the wrong shape, or a wrong defaultProfile: only an editor (or the repair of defaultProfile) fixes it
    const shapes: [unknown, RegExp][] = [
      [{ profiles: [] }, /profiles should be an object of profiles by name, and is a list/],
      [{ profiles: 'abc' }, /profiles should be an object of profiles by name, and is a text/],
      [{ profiles: { default: 'oops' } }, /profile "default" should be an object of settings, and is a text/],
      [{ defaultProfile: 5, profiles: {} }, /defaultProfile should be a profile's name, and is a number/],
      [{ profiles: { __proto__x: {} }, defaultProfile: '__proto__' }, /defaultProfile cannot name a profile/],
    ];
    for (const [config, message, key] of [...settings, ...shapes.map(([c, m]) => [c, m, undefined] as const)]) {
      const { home: dir, env } = home({ config });
      const before = readFileSync(configFile(dir), 'utf8');
      const report = await cli(['report', '--month', '2024-03'], { env });
      expect(report.code, `${JSON.stringify(config)}: ${report.stderr}`).toBe(2);
      expect(report.stderr).toContain(`convx: error: ${configFile(dir)}: `);
      expect(report.stderr).toMatch(message);
      expect(report.stderr).toContain(
        key ? `hint: fix it: convx config set ${key} VALUE --profile default, or convx config unset ${key} --profile default (or in an editor)\n` : 'hint: fix',
      );
      // config set of another key than the wrong one (none of these cases holds a deliveryApi)
      const set = await cli(['config', 'set', 'deliveryApi', 'https://h/v4'], { env });
      if (key === undefined) {
        expect([set.code, set.stderr], JSON.stringify(config)).toEqual([2, expect.stringMatching(message)]);
        // nothing written back
        expect(readFileSync(configFile(dir), 'utf8')).toBe(before);
        continue;
      }
      expect(set.code, `${JSON.stringify(config)}: ${set.stderr}`).toBe(0);
      expect(set.stderr).toMatch(new RegExp(`^warning: ${configFile(dir)}: ${message.source}.*; left unused until it is fixed: convx config set ${key} VALUE --profile default, or convx config unset ${key} --profile default\n`));
      // the wrong value kept as it was, beside the new setting
      const stored = (config as { profiles: { default: Record<string, unknown> } }).profiles.default;
      expect(readJson(configFile(dir)).profiles.default).toEqual({ ...stored, deliveryApi: 'https://h/v4' });
    }
    const { home: dir, env } = home({ config: { profiles: { default: { fromat: 'csv', data: SAMPLES } }, colour: 'red' } });
    const list = await cli(['config', 'list'], { env });
    expect(list.code).toBe(0);
    expect(list.stdout).toBe(`data=${SAMPLES}\n`);
    expect(list.stderr).toContain(`warning: ${configFile(dir)}: unknown key "colour", ignored`);
    expect(list.stderr).toContain(`warning: ${configFile(dir)}: profile "default" has an unknown setting "fromat", ignored (settings: mode, data, api,`);
    // kept as they are on a write (a newer convx's setting is not lost)
    expect((await cli(['config', 'set', 'format', 'csv'], { env })).code).toBe(0);
    expect(readJson(configFile(dir))).toMatchObject({ profiles: { default: { data: SAMPLES, format: 'csv', fromat: 'csv' } }, colour: 'red' });
  });

  it('config set stores only what is read back: a URL that is nothing once its trailing slashes go is refused, nothing written', async () => {
    const { home: dir, env } = home({ config: { profiles: { default: { format: 'csv' } } } });
    const before = readFileSync(configFile(dir), 'utf8');
    for (const [key, value] of [['api', 'http:///'], ['deliveryApi', 'https:///'], ['api', 'https://'], ['api', 'http://[::1/v1']]) {
      const set = await cli(['config', 'set', key!, value!], { env });
      expect(set.code, set.stderr).toBe(2);
      expect(set.stderr).toBe(`convx: error: config set ${key}: "${value}" is not an http(s) URL\n`);
      expect(readFileSync(configFile(dir), 'utf8')).toBe(before);
    }
    // the file still works for every command, and a URL's trailing slashes still go
    expect((await cli(['config', 'set', 'api', 'https://h/v1//'], { env })).code).toBe(0);
    expect(readJson(configFile(dir)).profiles.default).toEqual({ mode: 'api', api: 'https://h/v1', format: 'csv' });
    expect((await cli(['config', 'list'], { env })).code).toBe(0);
    // a scheme in capitals is a scheme, as the API client reads it
    expect((await cli(['config', 'set', 'api', 'HTTPS://h/v2'], { env })).code).toBe(0);
    expect((await cli(['config', 'list'], { env })).stderr).not.toContain('warning');
  });

  it('a wrong stored value stops the commands that use its profile; config, init and auth login|logout warn, leave it unused and keep it until config set|unset of its key repairs it', async () => {
    const broken = { profiles: { default: { mode: 'api', api: 'http:', format: 'csv' }, b: { api: 'http:' } } };
    const wrong = /profile "default": api is not an http\(s\) URL/;
    const set = home({ config: broken });
    for (const argv of [['report', '--month', '2024-03'], ['items', '--month', '2024-03'], ['auth', 'status']]) {
      const run = await cli(argv, { env: set.env });
      expect([run.code, run.stderr], argv.join(' ')).toEqual([2, expect.stringMatching(wrong)]);
    }
    // a command that takes no --profile uses no profile's settings: it runs, and says what is wrong
    const generated = await cli(['data', 'generate', '--out', join(tempDir(), 'g'), '--orders', '5', '--contacts', '3', '--touches', '5'], { env: set.env });
    expect(generated.code, generated.stderr).toBe(0);
    expect(generated.stderr).toMatch(/^warning: .*profile "default": api is not an http\(s\) URL; left unused until it is fixed/);
    // shown as stored, with the warning
    const list = await cli(['config', 'list'], { env: set.env });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toBe('mode=api\napi=http:\nformat=csv\n');
    expect(list.stderr).toMatch(wrong);
    const get = await cli(['config', 'get', 'api'], { env: set.env });
    expect([get.code, get.stdout]).toEqual([0, 'http:\n']);
    expect((await cli(['config', 'profiles'], { env: set.env })).code).toBe(0);
    // config set of another key keeps the wrong value as it is
    const other = await cli(['config', 'set', 'format', 'json'], { env: set.env });
    expect(other.code, other.stderr).toBe(0);
    expect(readJson(configFile(set.home)).profiles.default).toEqual({ mode: 'api', api: 'http:', format: 'json' });
    const fixed = await cli(['config', 'set', 'api', 'https://h/v1'], { env: set.env });
    expect(fixed.code, fixed.stderr).toBe(0);
    // the other profile's wrong value of the key is kept as it is (its own config set repairs it): one line of the commands of
    // another profile, an error of those of its own
    expect(readJson(configFile(set.home)).profiles).toEqual({ default: { mode: 'api', api: 'https://h/v1', format: 'json' }, b: { api: 'http:' } });
    expect(fixed.stderr).toMatch(/warning: .*profile "b" holds wrong settings \(api\), left unused: convx config list --profile b\n/);
    const ofDefault = await cli(['config', 'get', 'format'], { env: set.env });
    expect(ofDefault.stderr).toBe(`warning: ${configFile(set.home)}: profile "b" holds wrong settings (api), left unused: convx config list --profile b\n`);
    const ofB = await cli(['report', '--month', '2024-03', '--profile', 'b'], { env: set.env });
    expect([ofB.code, ofB.stderr]).toEqual([2, expect.stringMatching(/error: .*profile "b": api is not an http\(s\) URL\nhint: fix it: convx config set api VALUE --profile b, or convx config unset api --profile b/)]);
    expect((await cli(['config', 'list', '--profile', 'b'], { env: set.env })).stderr).toMatch(/warning: .*profile "b": api is not an http\(s\) URL; left unused until it is fixed/);
    expect((await cli(['config', 'set', 'api', 'https://b/v1', '--profile', 'b'], { env: set.env })).code).toBe(0);
    const clean = await cli(['config', 'list'], { env: set.env });
    expect([clean.code, clean.stderr]).toEqual([0, `profile "default" (${configFile(set.home)})\n`]);

    const unset = home({ config: broken });
    const removed = await cli(['config', 'unset', 'api'], { env: unset.env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stderr).toMatch(/profile "default": removed api\n$/);
    expect(readJson(configFile(unset.home)).profiles.default).toEqual({ mode: 'api', format: 'csv' });
    // a value that is no text, by the flag's spelling of the key; defaultProfile too
    const number = home({ config: { profiles: { default: { deliveryApi: 5, plugin: 'p' } } } });
    expect((await cli(['config', 'set', 'delivery-api', 'https://h/v4'], { env: number.env })).code).toBe(0);
    expect(readJson(configFile(number.home)).profiles.default).toEqual({ deliveryApi: 'https://h/v4', plugin: 'p' });
    const named = home({ config: { defaultProfile: '__proto__', profiles: { a: { plugin: 'p' } } } });
    const dropped = await cli(['config', 'unset', 'defaultProfile'], { env: named.env });
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(readJson(configFile(named.home))).toEqual({ profiles: { a: { plugin: 'p' } } });
    // wrong values of a profile: each repair runs, warning of the others, until none is left (none locks another out)
    const three = home({ config: { profiles: { default: { api: 'http:', format: 'xml', tz: 3 } } } });
    const first = await cli(['config', 'set', 'api', 'https://h/v1'], { env: three.env });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/api is not/);
    expect(first.stderr).toMatch(/warning: .*profile "default": format is not one of table, json, jsonl, csv, tsv; left unused/);
    expect(first.stderr).toMatch(/warning: .*profile "default": tz should be a text, and is a number; left unused/);
    expect(readJson(configFile(three.home)).profiles.default).toEqual({ mode: 'api', api: 'https://h/v1', format: 'xml', tz: 3 });
    const second = await cli(['config', 'set', 'format', 'csv'], { env: three.env });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toMatch(/format is not/);
    expect(second.stderr).toMatch(/tz should be a text/);
    const third = await cli(['config', 'unset', 'tz'], { env: three.env });
    expect([third.code, third.stderr]).toEqual([0, 'profile "default": removed tz\n']);
    expect(readJson(configFile(three.home)).profiles.default).toEqual({ mode: 'api', api: 'https://h/v1', format: 'csv' });
    expect((await cli(['config', 'list'], { env: three.env })).stderr).not.toContain('warning');
    // printed as stored: an empty text too, a value that is no text as JSON; a name the shell would split, quoted in the fix
    const odd = home({ config: { profiles: { 'my prod': { format: '', plugin: 5, data: null } } } });
    const env = { ...odd.env, CONVX_PROFILE: 'my prod' };
    expect(await cli(['config', 'get', 'format'], { env })).toMatchObject({ code: 0, stdout: '\n' });
    const listed = await cli(['config', 'list', '-o', 'json'], { env });
    expect(JSON.parse(listed.stdout)).toEqual({ profile: 'my prod', data: null, plugin: 5, format: '' });
    expect(listed.stderr).toContain("left unused until it is fixed: convx config set format VALUE --profile 'my prod', or convx config unset format --profile 'my prod'\n");
    expect((await cli(['config', 'get', 'api'], { env })).stderr).toContain("hint: set it with: convx config set api VALUE --profile 'my prod'\n");
    // the notes of config set name the profile too
    const staging = home({ config: { profiles: { staging: { mode: 'api', api: 'https://h/v1' } } } });
    const moved = await cli(['config', 'set', 'data', SAMPLES, '--profile', 'staging'], { env: staging.env });
    expect(moved.stderr).toContain('; mode is now local (its api stays, unused until: convx config set mode api --profile staging)\n');
    // a token asked of a profile that a bare command would not use: the login names it
    const api = home({ config: { profiles: { default: {}, 'my prod': { mode: 'api', api: 'http://127.0.0.1:9/v1' } } } });
    const noToken = await cli(['report', '--month', '2024-03', '--profile', 'my prod'], { env: api.env });
    expect([noToken.code, noToken.stderr]).toEqual([4, expect.stringContaining("or run `convx auth login --profile 'my prod'`\n")]);
  });

  it('a wrong token in config.json (an older convx, or a hand edit) is a warning of the config commands, and the next change drops it', async () => {
    const { home: dir, env } = home({ config: { profiles: { default: { mode: 'local', data: SAMPLES, token: 7 } } } });
    const report = await cli(['report', '--month', '2024-03'], { env });
    expect([report.code, report.stderr]).toEqual([2, expect.stringMatching(/profile "default": token should be a text, and is a number\nhint: fix it: convx auth logout --profile default removes it, convx auth login --profile default stores another/)]);
    const set = await cli(['config', 'set', 'format', 'csv'], { env });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toMatch(/token should be a text, and is a number; left unused until it is fixed: convx auth logout --profile default removes it/);
    expect(readJson(configFile(dir)).profiles.default).toEqual({ mode: 'local', data: SAMPLES, format: 'csv' });
    expect(existsSync(credentialsFile(dir))).toBe(false);
    expect((await cli(['report', '--month', '2024-03'], { env })).code).toBe(0);
    // auth logout removes one too
    const again = home({ config: { profiles: { default: { mode: 'local', data: SAMPLES, token: '' } } } });
    const logout = await cli(['auth', 'logout'], { env: again.env });
    expect([logout.code, logout.stderr.split('\n').at(-2)]).toEqual([0, 'removed the unusable token of profile "default"']);
    expect(readJson(configFile(again.home)).profiles.default).toEqual({ mode: 'local', data: SAMPLES });
  });

  it('a byte order mark (Notepad, PowerShell) before either file is read past; an error after it is placed as in an editor', async () => {
    const { home: dir, env } = home({ config: `\uFEFF${JSON.stringify({ profiles: { a: { mode: 'api', api: 'https://h/v1' } } })}`, credentials: `\uFEFF{"profiles":{"a":{"token":"tok-0123456789abcdef"}}}` });
    const list = await cli(['config', 'list', '--profile', 'a'], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('api=https://h/v1\n');
    expect(list.stdout).toMatch(/token=.*in the credentials file/);
    writeFileSync(configFile(dir), '\uFEFF{\n "profiles": {,}\n}');
    expect((await cli(['config', 'list'], { env })).stderr).toBe(`convx: error: ${configFile(dir)} is not valid JSON (at line 2, column 15); fix it or remove it\n`);
  });

  it('a config file that is not JSON, or of the wrong shape, stops the commands that use its settings, not those that use none (no --profile; completion)', async () => {
    for (const text of ['{\n "profiles": {,}\n}', '{"profiles": []}']) {
      const { home: dir, env } = home({ config: text });
      const stops = await cli(['report', '--data', SAMPLES, '--month', '2024-03'], { env });
      expect([stops.code, stops.stderr.split('\n')[0]], text).toEqual([2, expect.stringContaining(`convx: error: ${configFile(dir)}`)]);
      for (const argv of [['token', '--plugin', 'shop'], ['completion', 'bash'], ['data', 'generate', '--out', join(dir, 'shop'), '--orders', '5', '--touches', '5', '--contacts', '5']]) {
        // a profile CONVX_PROFILE names in the file that cannot be read is not missing: nothing of the file is used
        const run = await cli(argv, { env: { ...env, CONVX_JWT_SECRET: 'a-secret-of-at-least-32-characters!!', CONVX_PROFILE: 'prod' } });
        expect([run.code, run.stdout.length > 0, run.stderr], `${argv.join(' ')}: ${text}`).toEqual([
          0,
          argv[0] !== 'data',
          expect.stringMatching(new RegExp(`^warning: ${configFile(dir).replaceAll('.', '\\.')}.*This command uses none of its settings and runs without them\.\n`)),
        ]);
      }
    }
  });

  it('jsonErrorAt places an error after a number of any length and at any depth of nesting', () => {
    expect(jsonErrorAt(`{"x":${'1'.repeat(500)},\n"y": tru}`)).toEqual({ line: 2, column: 6 });
    expect(jsonErrorAt(`${'['.repeat(600)}1${']'.repeat(599)}}`)).toEqual({ line: 1, column: 1201 });
    expect(jsonErrorAt(`{"a":${'['.repeat(100_000)}x`)).toEqual({ line: 1, column: 100_006 });
    expect(jsonErrorAt(`${'['.repeat(600)}${']'.repeat(600)}`)).toBe(undefined);
    // a column counts UTF-16 code units: an emoji counts two
    expect(jsonErrorAt('{"😀": x}')).toEqual({ line: 1, column: 8 });
  });

  it('a config.json that cannot be read says so, and why (not "not valid JSON")', async () => {
    const folder = home();
    mkdirSync(configFile(folder.home));
    const run = await cli(['config', 'list'], { env: folder.env });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^convx: error: cannot read ${configFile(folder.home)}: it is a folder, not a file\n`));
    if (asRoot) return; // root reads a file of mode 000
    const closed = home({ config: { profiles: {} } });
    chmodSync(configFile(closed.home), 0o000);
    const denied = await cli(['config', 'list'], { env: closed.env });
    expect(denied.stderr).toMatch(/^convx: error: cannot read .*config\.json: permission denied\n/);
  });
});

describe('which profile', () => {
  it('an empty CONVX_PROFILE counts as unset, as every empty variable does', async () => {
    const { home: dir, env } = home();
    expect((await cli(['config', 'set', 'format', 'csv'], { env: { ...env, CONVX_PROFILE: '' } })).code).toBe(0);
    expect(readJson(configFile(dir)).profiles).toEqual({ default: { format: 'csv' } });
    expect((await cli(['config', 'get', 'format'], { env: { ...env, CONVX_PROFILE: '' } })).stdout).toBe('csv\n');
  });

  it('a missing profile is the same error whether --profile, CONVX_PROFILE or defaultProfile names it', async () => {
    const { home: dir, env } = home({ config: { profiles: { shop: { mode: 'local', data: SAMPLES } } } });
    const no = `convx: error: no profile "nonexist" in ${configFile(dir)}; profiles: shop\n`;
    const flag = await cli(['report', '--month', '2024-03', '--profile', 'nonexist'], { env });
    expect(flag).toMatchObject({ code: 2, stderr: no });
    const variable = await cli(['report', '--month', '2024-03'], { env: { ...env, CONVX_PROFILE: 'nonexist' } });
    expect(variable).toMatchObject({ code: 2, stderr: `${no}hint: unset CONVX_PROFILE, or set it to one of the profiles\n` });
    writeFileSync(configFile(dir), JSON.stringify({ defaultProfile: 'nonexist', profiles: { shop: { mode: 'local', data: SAMPLES } } }));
    const byDefault = await cli(['report', '--month', '2024-03'], { env });
    expect(byDefault.code).toBe(2);
    expect(byDefault.stderr).toMatch(new RegExp(`^${no.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}hint: the file's defaultProfile names it`));
    // the config commands can still repair it
    expect((await cli(['config', 'profiles'], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'defaultProfile', 'shop'], { env })).code).toBe(0);
    expect((await cli(['report', '--month', '2024-03', '-o', 'json'], { env })).code).toBe(0);
  });

  it('a write with --profile X does not make X the default profile', async () => {
    const { home: dir, env } = home();
    expect((await cli(['config', 'set', 'format', 'csv', '--profile', 'exports'], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'data', SAMPLES], { env })).stderr).toMatch(/^profile "default": data = /);
    expect(readJson(configFile(dir))).toEqual({ profiles: { exports: { format: 'csv' }, default: { mode: 'local', data: SAMPLES } } });
    expect((await cli(['auth', 'login', '--api', 'http://127.0.0.1:9/v1', '--with-token', '--no-verify', '--profile', 'remote'], { env, stdin: 'tok-0123456789abcdef' })).code).toBe(0);
    expect(readJson(configFile(dir)).defaultProfile).toBe(undefined);
    expect((await cli(['config', 'get', 'data'], { env })).stdout).toBe(`${SAMPLES}\n`);
  });

  it('names of JavaScript built-in properties are profiles like any other; __proto__ is refused', async () => {
    const { home: dir, env } = home({ config: { profiles: { shop: { format: 'csv' } } } });
    for (const name of ['toString', 'constructor', 'hasOwnProperty']) {
      expect((await cli(['config', 'list', '--profile', name], { env })).stderr).toMatch(new RegExp(`no profile "${name}"`));
      expect((await cli(['report', '--month', '2024-03'], { env: { ...env, CONVX_PROFILE: name } })).stderr).toMatch(new RegExp(`no profile "${name}"`));
    }
    expect((await cli(['config', 'set', 'defaultProfile', 'constructor'], { env })).stderr).toMatch(/no profile "constructor"/);
    const proto = await cli(['config', 'set', 'format', 'csv', '--profile', '__proto__'], { env });
    expect(proto).toMatchObject({ code: 2, stderr: 'convx: error: --profile: "__proto__" cannot name a profile (__proto__ is reserved)\nhint: give another profile name\n' });
    expect((await cli(['config', 'list'], { env: { ...env, CONVX_PROFILE: '__proto__' } })).stderr).toMatch(/^convx: error: CONVX_PROFILE: "__proto__" cannot name a profile/);
    // one that exists works, and is stored as any other
    expect((await cli(['config', 'set', 'format', 'json', '--profile', 'constructor'], { env })).code).toBe(0);
    expect((await cli(['config', 'get', 'format', '--profile', 'constructor'], { env })).stdout).toBe('json\n');
    expect(readJson(configFile(dir)).profiles.constructor).toEqual({ format: 'json' });
  });
});

describe('the config commands work whatever the mode state', () => {
  it('a profile with data and api and no mode: every config command works, a backend command says what to choose', async () => {
    const { home: dir, env } = home({ config: { defaultProfile: 'default', profiles: { default: { data: SAMPLES, api: 'http://h/v1' } } } });
    expect(await cli(['config', 'list'], { env })).toMatchObject({ code: 0, stdout: `data=${SAMPLES}\napi=http://h/v1\n` });
    expect((await cli(['config', 'profiles'], { env })).code).toBe(0);
    expect((await cli(['config', 'get', 'api'], { env })).stdout).toBe('http://h/v1\n');
    const report = await cli(['report', '--month', '2024-03'], { env });
    expect(report).toMatchObject({ code: 2, stderr: 'convx: error: data and api both set (profile "default"): choose local mode or API mode\n' });
    expect((await cli(['config', 'unset', 'api'], { env })).code).toBe(0);
    expect(readJson(configFile(dir)).profiles.default).toEqual({ data: SAMPLES });
    expect((await cli(['report', '--month', '2024-03', '-o', 'json'], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'api', 'http://h/v1'], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'mode', 'local'], { env })).code).toBe(0);
  });

  it('CONVX_DATA with CONVX_API_URL, or a bad CONVX_THREADS: config commands still work', async () => {
    const { env } = home({ config: { profiles: { default: { format: 'csv' } } } });
    for (const extra of [{ CONVX_DATA: SAMPLES, CONVX_API_URL: 'http://h/v1' }, { CONVX_THREADS: 'many' }] as Record<string, string>[]) {
      expect((await cli(['config', 'list'], { env: { ...env, ...extra } })).stdout).toMatch(/format=csv\n$/);
      expect((await cli(['config', 'set', 'plugin', 'shop'], { env: { ...env, ...extra } })).code).toBe(0);
      expect((await cli(['config', 'profiles'], { env: { ...env, ...extra } })).code).toBe(0);
      expect((await cli(['report', '--month', '2024-03'], { env: { ...env, ...extra } })).code).toBe(2);
    }
  });
});

describe('where the config goes', () => {
  it('a relative XDG_CONFIG_HOME is ignored, as the XDG specification says: ~/.config', async () => {
    const user = tempDir();
    const cwd = tempDir();
    const set = await cli(['config', 'set', 'format', 'csv'], { env: { XDG_CONFIG_HOME: 'relative/config', HOME: user }, cwd });
    expect(set.code, set.stderr).toBe(0);
    expect(readJson(join(user, '.config', 'convx', 'config.json')).profiles.default).toEqual({ format: 'csv' });
    expect(existsSync(join(cwd, 'relative'))).toBe(false);
  });

  it('a config home that is a file, or that cannot be made, is an error naming the path and why (exit 2)', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const notFolder = await cli(['config', 'set', 'format', 'csv'], { env: { XDG_CONFIG_HOME: file } });
    expect(notFolder.code).toBe(2);
    expect(notFolder.stderr).toMatch(new RegExp(`^convx: error: cannot read ${file}/convx/config\\.json: a part of its path is not a folder\nhint: `));
    const nowhere = await cli(['config', 'set', 'format', 'csv'], { env: { XDG_CONFIG_HOME: '/proc/self/none' } });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/^convx: error: cannot make the folder \/proc\/self\/none/);
    if (asRoot) return;
    const closed = tempDir();
    chmodSync(closed, 0o500);
    const denied = await cli(['config', 'set', 'format', 'csv'], { env: { XDG_CONFIG_HOME: closed } });
    expect(denied.stderr).toMatch(new RegExp(`^convx: error: cannot make the folder ${closed}/convx: permission denied\n`));
  });
});
