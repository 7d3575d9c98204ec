/**
 * Issue 12, items 13-15: install (no EBADENGINE dependency on Node 20), `convx
 * config` and where secrets go, `convx init` without a silent dataset, and
 * shell completion with values from the configured dataset or API.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDefaultBackend, openDefaultLookups } from '../src/backends.js';
import { run } from '../src/cli.js';
import { completionValues } from '../src/commands/values.js';
import { createContext } from '../src/context.js';
import { NotFoundError } from '../src/errors.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { Capture, SAMPLES, cli, csv, dataset, scripted, serveInProcess, suiteThreads, tempDir } from './helpers.js';

const ROOT = join(import.meta.dirname, '..');
const configFile = (home: string) => join(home, 'convx', 'config.json');
const credentialsFile = (home: string) => join(home, 'convx', 'credentials.json');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('install (item 13)', () => {
  it('every installed package supports Node 20 (no EBADENGINE: cookie 2 wants Node 22)', () => {
    const lock = readJson(join(ROOT, 'package-lock.json')) as { packages: Record<string, { version?: string; engines?: { node?: string } | string[]; dev?: boolean }> };
    const unsupported = Object.entries(lock.packages)
      .filter(([path, p]) => path && !p.dev && typeof p.engines === 'object' && !Array.isArray(p.engines) && /^>=\s*2[1-9]/.test(p.engines.node ?? ''))
      .map(([path, p]) => `${path}@${p.version} (node ${(p.engines as { node: string }).node})`);
    expect(unsupported).toEqual([]);
    // what fastify's inject() loads at run time is the hoisted Node 20 one
    expect(existsSync(join(ROOT, 'node_modules', 'fastify', 'node_modules', 'light-my-request'))).toBe(false);
    expect(readJson(join(ROOT, 'node_modules', 'light-my-request', 'package.json')).version).toBe('6.6.0');
    expect(readJson(join(ROOT, 'node_modules', 'cookie', 'package.json')).engines?.node ?? '').not.toMatch(/>=\s*2[1-9]/);
  });

  it('the direct dependency pins the version a tarball install resolves too (overrides do not reach a global install)', () => {
    const pkg = readJson(join(ROOT, 'package.json'));
    expect(pkg.dependencies['light-my-request']).toBe('6.6.0');
    expect(pkg.bin).toEqual({ convx: 'bin/convx.js' });
    expect(pkg.files).toEqual(expect.arrayContaining(['bin', 'dist/*.cjs', 'dist/validation/data']));
  });
});

describe('convx config (item 14)', () => {
  it('set, get, list and unset a profile setting; a dataset path is stored absolute', async () => {
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    const set = await cli(['config', 'set', 'data', 'samples/shop'], { env, cwd: ROOT });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('');
    expect(set.stderr).toMatch(/profile "default": data = .*samples\/shop/);
    expect(readJson(configFile(home))).toEqual({ profiles: { default: { mode: 'local', data: SAMPLES } } });
    expect(statSync(configFile(home)).mode & 0o777).toBe(0o600);

    expect(await cli(['config', 'get', 'data'], { env })).toMatchObject({ code: 0, stdout: `${SAMPLES}\n` });
    // the profile now works without --data
    const report = await cli(['report', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'], { env });
    expect(report.stdout).toBe((await cli(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stdout);

    await cli(['config', 'set', 'format', 'csv'], { env });
    expect((await cli(['config', 'list'], { env })).stdout).toBe(`mode=local\ndata=${SAMPLES}\nformat=csv\n`);
    expect(JSON.parse((await cli(['config', 'list', '-o', 'json'], { env })).stdout)).toEqual({ profile: 'default', mode: 'local', data: SAMPLES, format: 'csv' });

    const unset = await cli(['config', 'unset', 'format'], { env });
    expect(unset.code).toBe(0);
    const missing = await cli(['config', 'get', 'format'], { env });
    expect(missing.code).toBe(new NotFoundError('x').exitCode);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/convx: error: format is not set in profile "default"/);
  });

  it('refuses a token, unknown keys and bad values, naming what to use instead', async () => {
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    const token = await cli(['config', 'set', 'token', 'secret-value-1234567890'], { env });
    expect(token.code).toBe(2);
    expect(token.stderr).toMatch(/convx: error: config set: the token is not a config setting .*credentials file.*convx auth login/);
    expect(token.stderr).not.toContain('secret-value');
    expect(existsSync(configFile(home))).toBe(false);
    expect((await cli(['config', 'get', 'token'], { env })).stderr).toMatch(/convx auth status/);

    const unknown = await cli(['config', 'set', 'colour', 'red'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/"colour" is not a setting; settings: mode, data, api, deliveryApi, plugin, format, tz, trackingDomains, trackingParams, defaultProfile/);
    expect((await cli(['config', 'set', 'format', 'xml'], { env })).stderr).toMatch(/config set format: "xml" is not one of table, json, jsonl, csv, tsv/);
    expect((await cli(['config', 'set', 'api', 'ftp://x'], { env })).stderr).toMatch(/not an http\(s\) URL/);
    expect((await cli(['config', 'set', 'defaultProfile', 'nope'], { env })).stderr).toMatch(/no profile "nope"/);
    expect(existsSync(configFile(home))).toBe(false);
    // the flag's spelling works too
    expect((await cli(['config', 'set', 'delivery-api', 'https://host/v4/'], { env })).code).toBe(0);
    expect(readJson(configFile(home)).profiles.default).toEqual({ deliveryApi: 'https://host/v4' });
  });

  it('respects --profile and CONVX_PROFILE; profiles lists them and marks the one in use', async () => {
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    expect((await cli(['config', 'set', 'data', SAMPLES], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'api', 'https://reports.example.com/v1', '--profile', 'prod'], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'format', 'json', '--profile', 'prod'], { env })).code).toBe(0);
    const config = readJson(configFile(home));
    expect(config.profiles.prod).toEqual({ mode: 'api', api: 'https://reports.example.com/v1', format: 'json' });
    // a profile named in a write does not become the default (only `config set defaultProfile` makes one)
    expect(config.defaultProfile).toBe(undefined);

    expect((await cli(['config', 'get', 'api', '--profile', 'prod'], { env })).stdout).toBe('https://reports.example.com/v1\n');
    expect((await cli(['config', 'get', 'api'], { env: { ...env, CONVX_PROFILE: 'prod' } })).stdout).toBe('https://reports.example.com/v1\n');
    expect((await cli(['config', 'get', 'api'], { env })).code).not.toBe(0);
    const unknown = await cli(['config', 'get', 'api', '--profile', 'nope'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no profile "nope"/);

    const profiles = await cli(['config', 'profiles'], { env });
    expect(profiles.stdout).toBe(`* default  local  ${SAMPLES}  (default)\n  prod     api    https://reports.example.com/v1  (format json)\n`);
    const viaEnv = await cli(['config', 'profiles', '-o', 'json'], { env: { ...env, CONVX_PROFILE: 'prod' } });
    expect(JSON.parse(viaEnv.stdout)).toEqual([
      { name: 'default', default: true, active: false, mode: 'local', target: SAMPLES, format: null, plugin: null, token: false },
      { name: 'prod', default: false, active: true, mode: 'api', target: 'https://reports.example.com/v1', format: 'json', plugin: null, token: false },
    ]);
    expect((await cli(['config', 'set', 'defaultProfile', 'prod'], { env })).code).toBe(0);
    expect((await cli(['config', 'profiles'], { env })).stdout).toMatch(/^ {2}default .*\n\* prod .*\(default, format json\)\n$/);
  });

  it('a profile in API mode without an api says so, not "no dataset"', async () => {
    const env = { XDG_CONFIG_HOME: tempDir() };
    expect((await cli(['config', 'set', 'mode', 'api', '--profile', 'remote'], { env })).code).toBe(0);
    const run = await cli(['report', '--month', '2024-03', '--profile', 'remote'], { env });
    expect([run.code, run.stdout]).toEqual([2, '']);
    expect(run.stderr).toBe('convx: error: profile "remote" is in API mode but has no api\nhint: convx config set api URL --profile remote (or pass --data DIR for local mode)\n');
    // --data names the dataset whatever the profile's mode
    expect((await cli(['report', '--month', '2024-03', '--profile', 'remote', '--data', SAMPLES, '-o', 'json'], { env })).code).toBe(0);
  });

  it('config profiles prints its records in each format: jsonl one a line, csv and tsv under a header', async () => {
    const env = { XDG_CONFIG_HOME: tempDir() };
    expect((await cli(['config', 'set', 'data', SAMPLES], { env })).code).toBe(0);
    expect((await cli(['config', 'set', 'api', 'https://reports.example.com/v1', '--profile', 'prod'], { env })).code).toBe(0);
    const records = [
      { name: 'default', default: true, active: true, mode: 'local', target: SAMPLES, format: null, plugin: null, token: false },
      { name: 'prod', default: false, active: false, mode: 'api', target: 'https://reports.example.com/v1', format: null, plugin: null, token: false },
    ];
    const jsonl = await cli(['config', 'profiles', '-o', 'jsonl'], { env });
    expect(jsonl.code, jsonl.stderr).toBe(0);
    expect(jsonl.stdout).toBe(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    expect(JSON.parse((await cli(['config', 'profiles', '-o', 'json'], { env })).stdout)).toEqual(records);
    expect((await cli(['config', 'profiles', '-o', 'csv'], { env })).stdout).toBe(
      `name,default,active,mode,target,format,plugin,token\ndefault,true,true,local,${SAMPLES},,,false\nprod,false,false,api,https://reports.example.com/v1,,,false\n`,
    );
    expect((await cli(['config', 'profiles', '-o', 'tsv'], { env })).stdout).toBe(
      `name\tdefault\tactive\tmode\ttarget\tformat\tplugin\ttoken\ndefault\ttrue\ttrue\tlocal\t${SAMPLES}\t\t\tfalse\nprod\tfalse\tfalse\tapi\thttps://reports.example.com/v1\t\t\tfalse\n`,
    );
    // a profile's default format is for reports: the listing stays text
    expect((await cli(['config', 'set', 'format', 'csv'], { env })).code).toBe(0);
    expect((await cli(['config', 'profiles'], { env })).stdout).toMatch(/^\* default {2}local/);
  });

  it('tokens go only to credentials.json (0600), never to config.json; an old config.json token moves there', async () => {
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    const token = 'legacy-token-abcdefghijklmnop-WXYZ';
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(home, 'convx'), { recursive: true });
    writeFileSync(configFile(home), JSON.stringify({ profiles: { default: { mode: 'api', api: 'https://h/v1', token } } }));
    // read as before
    const list = await cli(['config', 'list'], { env });
    expect(list.stdout).toBe(`mode=api\napi=https://h/v1\ntoken=****WXYZ (${token.length} characters), in config.json, left there by an older convx (the next change moves it to the credentials file)\n`);
    expect((await cli(['config', 'profiles'], { env })).stdout).toBe('* default  api  https://h/v1  (default, token in config.json, from an older convx)\n');
    expect(list.stdout + list.stderr).not.toContain(token);
    // any write moves it
    expect((await cli(['config', 'set', 'format', 'json'], { env })).code).toBe(0);
    expect(readFileSync(configFile(home), 'utf8')).not.toContain(token);
    expect(readJson(credentialsFile(home))).toEqual({ profiles: { default: { token } } });
    expect(statSync(credentialsFile(home)).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'convx')).mode & 0o777).toBe(0o700);
    // and the context still finds it
    const ctx = await createContext(
      { stdin: new PassThrough(), stdinIsTTY: false, stdout: new Capture(), stderr: new Capture(), stdoutIsTTY: false, stderrIsTTY: false, env, cwd: ROOT, now: () => new Date(), onSignal: () => () => undefined },
      { color: false },
      openDefaultBackend,
    );
    expect(await ctx.token()).toBe(token);
    // logout removes it, and the file with it
    expect((await cli(['auth', 'logout'], { env })).code).toBe(0);
    expect(existsSync(credentialsFile(home))).toBe(false);
    expect(readJson(configFile(home)).profiles.default).toEqual({ mode: 'api', api: 'https://h/v1', format: 'json' });
  });

  describe('init', () => {
    const DOWN = '\x1b[B';
    /**
     * Answers each prompt once its question is on stderr (keys typed earlier would be lost): woken by
     * each write to stderr, not by polling. A prompt writes its question and attaches its key handler
     * in one synchronous render, so the key goes once that render is over (after setImmediate).
     */
    const answer = async (steps: [RegExp, string][], args: string[] = [], cwd = ROOT, home = tempDir(), command = ['init'], env: Record<string, string> = {}) => {
      const stdin = new PassThrough();
      // inquirer ends its output stream after each prompt; a terminal's stderr stays open, and so does this one
      const stderr = new (class extends Capture {
        /** Called after each write (the typing below waits for it). */
        wrote = (): void => undefined;
        override _write(chunk: Buffer | string, encoding: BufferEncoding, done: () => void): void {
          super._write(chunk, encoding, done);
          this.wrote();
        }
        override end(): this {
          return this;
        }
      })();
      /** The next write to stderr, or 250 ms, whichever comes first. */
      const written = () =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 250);
          stderr.wrote = () => (clearTimeout(timer), resolve());
        });
      const typing = (async () => {
        let seen = 0;
        for (const [question, key] of steps) {
          for (const began = Date.now(); !question.test(stderr.text.slice(seen)); await written()) {
            if (Date.now() - began > 15_000) throw new Error(`no prompt ${question} in: ${stderr.text}`);
          }
          seen = stderr.text.length;
          await new Promise((r) => setImmediate(r));
          stdin.write(key);
        }
      })();
      const io = { stdin, stdinIsTTY: true, stdout: new Capture(), stderr, stdoutIsTTY: false, stderrIsTTY: false, env: { XDG_CONFIG_HOME: home, ...env }, cwd, now: () => new Date(), onSignal: () => () => undefined };
      const code = await run([...command, ...args], io);
      await typing;
      return { code, stderr: stderr.text, home };
    };
    const MODE = /Where does the data come from/;
    const FORMAT = /Default output format/;

    it('saves no dataset when the answer is empty (not the current directory)', async () => {
      const local = await answer([[MODE, '\r'], [FORMAT, '\r'], [/Dataset directory or \.duckdb file \(empty: none/, '\r']], [], SAMPLES);
      expect(local.code, local.stderr).toBe(0);
      expect(readJson(configFile(local.home)).profiles.default).toEqual({ mode: 'local' });
      expect(local.stderr).toMatch(/without a dataset: pass --data DIR, or save one with: convx config set data DIR/);
    }, 20_000);

    it('puts the typed token in credentials.json only (--no-verify: an API that is not there, saved unchecked)', async () => {
      const api = await answer(
        [[MODE, `${DOWN}\r`], [FORMAT, '\r'], [/Reporting base URL/, 'http://127.0.0.1:9/v1\r'], [/Delivery base URL/, '\r'], [/API token/, 'typed-secret-token\r']],
        ['--profile', 'staging', '--no-verify'],
      );
      expect(api.code, api.stderr).toBe(0);
      expect(readJson(configFile(api.home))).toEqual({ profiles: { staging: { mode: 'api', api: 'http://127.0.0.1:9/v1' } } });
      expect(readJson(credentialsFile(api.home))).toEqual({ profiles: { staging: { token: 'typed-secret-token' } } });
      expect(statSync(credentialsFile(api.home)).mode & 0o777).toBe(0o600);
      expect(api.stderr).not.toContain('typed-secret-token');
      expect(api.stderr).toContain(`saved profile "staging" in ${configFile(api.home)}; check it with: convx auth status --profile staging\n`);
    }, 20_000);

    it('ends with the command that uses the profile it saved', async () => {
      const local = await answer([[MODE, '\r'], [FORMAT, '\r'], [/Dataset directory/, `${SAMPLES}\r`]], ['--profile', 'mine']);
      expect(local.code, local.stderr).toBe(0);
      expect(local.stderr).toContain(`saved profile "mine" in ${configFile(local.home)}; try: convx report --profile mine\n`);
      const bare = await answer([[MODE, '\r'], [FORMAT, '\r'], [/Dataset directory/, `${SAMPLES}\r`]]);
      expect(bare.stderr).toContain(`saved profile "default" in ${configFile(bare.home)}; try: convx report\n`);
    }, 20_000);

    it('a second init keeps the settings it does not ask about; the stored answers are its defaults', async () => {
      const home = tempDir();
      const env = { XDG_CONFIG_HOME: home };
      for (const [key, value] of [['tz', 'Europe/Prague'], ['plugin', 'shop'], ['trackingDomains', 'shop.example.com'], ['data', SAMPLES], ['format', 'csv']]) {
        expect((await cli(['config', 'set', key!, value!, '--profile', 'i1'], { env })).code).toBe(0);
      }
      const again = await answer([[MODE, '\r'], [FORMAT, '\r'], [/Dataset directory or \.duckdb file/, '\r']], ['--profile', 'i1'], ROOT, home);
      expect(again.code, again.stderr).toBe(0);
      expect(readJson(configFile(home)).profiles.i1).toEqual({ mode: 'local', data: SAMPLES, plugin: 'shop', format: 'csv', tz: 'Europe/Prague', trackingDomains: 'shop.example.com' });
      // API mode: the dataset stays (unused), as with config set api; an empty token keeps the stored one, as the prompt says
      const login = await cli(['auth', 'login', '--api', 'http://127.0.0.1:9/v1', '--with-token', '--no-verify', '--profile', 'i1'], { env, stdin: 'stored-token-123' });
      expect(login.code, login.stderr).toBe(0);
      const api = await answer(
        [[MODE, '\r'], [FORMAT, '\r'], [/Reporting base URL/, '\r'], [/Delivery base URL \(v4; empty to skip\)/, '\r'], [/API token \(empty: keep the stored one\)/, '\r']],
        ['--profile', 'i1', '--no-verify'],
        ROOT,
        home,
      );
      expect(api.code, api.stderr).toBe(0);
      expect(readJson(configFile(home)).profiles.i1).toEqual({ mode: 'api', data: SAMPLES, api: 'http://127.0.0.1:9/v1', plugin: 'shop', format: 'csv', tz: 'Europe/Prague', trackingDomains: 'shop.example.com' });
      expect(readJson(credentialsFile(home))).toEqual({ profiles: { i1: { token: 'stored-token-123' } } });
      expect(api.stderr).toContain('(the stored token kept); check it with: convx auth status --profile i1\n');
    }, 30_000);

    it('runs on a profile with wrong stored values: offers none of them, writes what it asks as answered, keeps the rest as they are with a warning', async () => {
      const home = tempDir();
      mkdirSync(join(home, 'convx'), { recursive: true });
      writeFileSync(configFile(home), JSON.stringify({ profiles: { default: { mode: 'lcoal', format: 'xml', tz: 'Mars/Base', data: SAMPLES } } }));
      // the mode's and the format's first choices (local; no format), the stored dataset
      const run = await answer([[MODE, '\r'], [FORMAT, '\r'], [/Dataset directory or \.duckdb file/, '\r']], [], ROOT, home);
      expect(run.code, run.stderr).toBe(0);
      for (const wrong of [/mode is not one of local, api; left unused/, /format is not one of table, json, jsonl, csv, tsv; left unused/, /tz is not an IANA time zone name.*; left unused/]) {
        expect(run.stderr).toMatch(wrong);
      }
      // format answered as none: the wrong one is not written back; tz, which init does not ask, is kept as it was, and said so
      expect(readJson(configFile(home)).profiles.default).toEqual({ mode: 'local', data: SAMPLES, tz: 'Mars/Base' });
      expect(run.stderr).toContain(`saved profile "default" in ${configFile(home)}; it still holds wrong settings (tz), which stop the commands that use it: fix them with convx config set|unset KEY\n`);
      // still an error of a command that uses it, until config set|unset repairs it
      expect((await cli(['report', '--month', '2024-03'], { env: { XDG_CONFIG_HOME: home } })).code).toBe(2);
      expect((await cli(['config', 'unset', 'tz'], { env: { XDG_CONFIG_HOME: home } })).code).toBe(0);
      expect((await cli(['report', '--month', '2024-03'], { env: { XDG_CONFIG_HOME: home } })).code).toBe(0);
    }, 20_000);

    it('checks each answer as config set checks the setting: a delivery URL that is no URL is asked again', async () => {
      const refused = await cli(['config', 'set', 'deliveryApi', 'not a url'], { env: { XDG_CONFIG_HOME: tempDir() } });
      expect(refused.stderr).toContain('convx: error: config set deliveryApi: "not a url" is not an http(s) URL');
      const run = await answer(
        [
          [MODE, `${DOWN}\r`],
          [FORMAT, '\r'],
          [/Reporting base URL/, 'https://reports.example.com/v1/\r'],
          [/Delivery base URL/, 'not a url\r'],
          // nothing is left of it once its trailing slashes go: asked again too, as config set refuses it
          [/is not an http\(s\) URL/, '\x15https:///\r'],
          [/"https:\/\/\/" is not an http\(s\) URL/, '\x15https://reports.example.com/v4\r'],
          [/API token/, '\r'],
        ],
        ['--no-verify'],
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\s+/g, ' ')).toContain('the delivery URL: "not a url" is not an http(s) URL');
      // stored as config set stores it: without the trailing slash
      expect(readJson(configFile(run.home)).profiles.default).toEqual({ mode: 'api', api: 'https://reports.example.com/v1', deliveryApi: 'https://reports.example.com/v4' });
    }, 20_000);

    it('Ctrl-C at a prompt of init or auth login exits 130, "interrupted", and saves nothing', async () => {
      const init = await answer([[MODE, '\x03']]);
      expect(init.code).toBe(130);
      expect(init.stderr).toMatch(/\ninterrupted\n$/);
      expect(init.stderr).not.toContain('unexpected error');
      const later = await answer([[MODE, '\r'], [FORMAT, '\x03']]);
      expect(later.code).toBe(130);
      expect(existsSync(join(later.home, 'convx'))).toBe(false);
      const login = await answer([[/API token/, '\x03']], ['--api', 'http://127.0.0.1:9/v1', '--no-verify'], ROOT, tempDir(), ['auth', 'login']);
      expect(login.code).toBe(130);
      expect(login.stderr).toMatch(/\ninterrupted\n$/);
      expect(existsSync(join(login.home, 'convx'))).toBe(false);
      // with CONVX_TIMINGS, the timings so far come before "interrupted", once, as on a signal
      const timed = await answer([[MODE, '\x03']], [], ROOT, tempDir(), ['init'], { CONVX_TIMINGS: '1' });
      expect(timed.code).toBe(130);
      expect(timed.stderr).toMatch(/\ntimings \(CONVX_TIMINGS\), wall time;.*\n(?:  .*\n)*  total\s+\d+ ms\n\ninterrupted\n$/);
      expect(timed.stderr.match(/timings \(CONVX_TIMINGS\)/g)).toHaveLength(1);
    }, 20_000);

    it('a token no HTTP header can carry is asked again by init, refused by auth login even with --no-verify, and a usage error in any command', async () => {
      const run = await answer(
        [[MODE, `${DOWN}\r`], [FORMAT, '\r'], [/Reporting base URL/, 'http://127.0.0.1:9/v1\r'], [/Delivery base URL/, '\r'], [/API token/, 'tok€x\r'], [/outside ASCII/, '\x15good-token\r']],
        ['--no-verify'],
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\s+/g, ' ')).toContain('the token holds a character outside ASCII (character 4), which an HTTP header cannot carry');
      expect(run.stderr).not.toContain('tok€x');
      expect(readJson(credentialsFile(run.home))).toEqual({ profiles: { default: { token: 'good-token' } } });

      const home = tempDir();
      for (const [token, what] of [['tok€x', 'a character outside ASCII (character 4)'], ['tok x', 'a space (character 4)'], ['tok\tx', 'a control character (character 4)']]) {
        const login = await cli(['auth', 'login', '--api', 'http://127.0.0.1:9/v1', '--with-token', '--no-verify'], { env: { XDG_CONFIG_HOME: home }, stdin: token });
        expect(login.code).toBe(2);
        expect(login.stderr).toContain(`convx: error: auth login: the token holds ${what}, which an HTTP header cannot carry (its content is not shown)\n`);
        expect(login.stderr).not.toContain(token!);
        expect(login.stderr).not.toContain('--no-verify');
      }
      expect(existsSync(join(home, 'convx'))).toBe(false);
      const report = await cli(['report', '--api', 'http://127.0.0.1:9/v1', '--from', '2024-03-01', '--to', '2024-03-31'], { env: { XDG_CONFIG_HOME: home, CONVX_TOKEN: 'tok€x' } });
      expect(report.code).toBe(2);
      expect(report.stderr).toMatch(/^convx: error: .*the token holds a character outside ASCII \(character 4\), which an HTTP header cannot carry/);
      expect(report.stderr).not.toContain('tok€x');
      expect(report.stderr).not.toContain('cannot reach');
    }, 20_000);

    describe('in API mode, against convx serve', () => {
      const SECRET = 'init-check-secret';
      let server: { url: string; stop: () => Promise<number> };
      let token = '';
      beforeAll(async () => {
        server = await serveInProcess(['--data', SAMPLES, '--port', '0'], { CONVX_JWT_SECRET: SECRET });
        token = await signDevelopmentToken(SECRET, 'shop', '1h');
      });
      afterAll(async () => server?.stop());
      const URL_PROMPT = /Reporting base URL/;

      it('asks again for a URL without /v1 ("did you mean"), one not reachable or not the interface; saves what answers', async () => {
        const run = await answer(
          [
            [MODE, `${DOWN}\r`],
            [FORMAT, '\r'],
            [URL_PROMPT, `${server.url}\r`],
            // each answer once the prompt says what is wrong with the last (ctrl-U clears the line kept for editing)
            [/did you mean/, '\x15http://127.0.0.1:9/v1\r'],
            [/cannot reach/, `\x15${server.url}/x/v1\r`],
            [/does not answer/, `\x15${server.url}/v1\r`],
            [/Delivery base URL/, '\r'],
            [/API token/, `${token}\r`],
          ],
          ['--profile', 'staging'],
        );
        expect(run.code, run.stderr).toBe(0);
        // what the prompt said, its lines as the terminal's width broke them joined again
        const said = run.stderr.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\s+/g, ' ');
        expect(said).toContain(`${server.url} is not a reporting base URL: it lacks the version prefix /v1; did you mean ${server.url}/v1?`);
        expect(said).toContain(
          'cannot reach the API at http://127.0.0.1:9/v1: connection refused (GET http://127.0.0.1:9/healthz) (check the URL and that the service is up; --no-verify stores it without checking)',
        );
        expect(said).toContain(`${server.url}/x/v1 does not answer the reporting interface: GET ${server.url}/x/healthz answered with HTTP 404`);
        expect(readJson(configFile(run.home))).toEqual({ profiles: { staging: { mode: 'api', api: `${server.url}/v1` } } });
        expect(readJson(credentialsFile(run.home))).toEqual({ profiles: { staging: { token } } });
        expect(run.stderr).toContain(`saved profile "staging" in ${configFile(run.home)}; the API accepts the token; try: convx report --profile staging\n`);
        expect(run.stderr).not.toContain(token);
        // and that command works
        const report = await cli(['report', '--profile', 'staging', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'], { env: { XDG_CONFIG_HOME: run.home } });
        expect(report.stdout).toBe((await cli(['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'])).stdout);
      }, 30_000);

      it('a token the API refuses is an error (exit 4) and nothing is saved; no token: saved, with the command that stores one', async () => {
        const refused = await answer([[MODE, `${DOWN}\r`], [FORMAT, '\r'], [URL_PROMPT, `${server.url}/v1\r`], [/Delivery base URL/, '\r'], [/API token/, 'not-a-token\r']]);
        expect(refused.code).toBe(4);
        expect(refused.stderr).toContain('convx: error: not stored: the API refused the request (403): the bearer token is not a JWT\n');
        expect(existsSync(join(refused.home, 'convx'))).toBe(false);
        const none = await answer([[MODE, `${DOWN}\r`], [FORMAT, '\r'], [URL_PROMPT, `${server.url}/v1\r`], [/Delivery base URL/, '\r'], [/API token/, '\r']], ['--profile', 'ci']);
        expect(none.code, none.stderr).toBe(0);
        expect(none.stderr).toContain(`saved profile "ci" in ${configFile(none.home)}, without a token: store one with: convx auth login --profile ci\n`);
        expect(existsSync(credentialsFile(none.home))).toBe(false);
      }, 30_000);

      it('auth login checks the same: the URL (a usage error, or exit 5) before the token, and stores nothing unless both pass', async () => {
        const home = tempDir();
        const login = (api: string, ...extra: string[]) => cli(['auth', 'login', '--api', api, '--with-token', ...extra], { env: { XDG_CONFIG_HOME: home }, stdin: token });
        const bare = await login(server.url);
        expect(bare.code).toBe(2);
        expect(bare.stderr).toBe(`convx: error: ${server.url} is not a reporting base URL: it lacks the version prefix /v1; did you mean ${server.url}/v1?\n`);
        const delivery = await login(`${server.url}/v4`);
        expect(delivery.stderr).toMatch(/did you mean http:\/\/127\.0\.0\.1:\d+\/v1\?\n$/);
        const elsewhere = await login(`${server.url}/reports/v1`);
        expect(elsewhere.code).toBe(5);
        expect(elsewhere.stderr).toBe(
          `convx: error: ${server.url}/reports/v1 does not answer the reporting interface: GET ${server.url}/reports/healthz answered with HTTP 404\n` +
            'hint: give the reporting base URL of a convx API, e.g. https://host/v1 (convx serve: http://HOST:PORT/v1); --no-verify stores it without checking\n',
        );
        const down = await login('http://127.0.0.1:9/v1');
        expect(down.code).toBe(5);
        expect(down.stderr).toBe(
          'convx: error: cannot reach the API at http://127.0.0.1:9/v1: connection refused (GET http://127.0.0.1:9/healthz)\n' +
            'hint: check the URL and that the service is up; --no-verify stores it without checking\n',
        );
        expect(existsSync(join(home, 'convx'))).toBe(false);
        // the escape hatch: stored unchecked
        const unchecked = await login('http://127.0.0.1:9/v1', '--no-verify');
        expect(unchecked.code, unchecked.stderr).toBe(0);
        expect(readJson(configFile(home)).profiles.default).toEqual({ mode: 'api', api: 'http://127.0.0.1:9/v1' });
        const good = await login(`${server.url}/v1`, '--profile', 'served');
        expect(good.code, good.stderr).toBe(0);
        expect(good.stderr).toMatch(/^logged in to http:\/\/127\.0\.0\.1:\d+\/v1 as profile "served", plugin shop/);
        // /healthz answers, but the prefix serves nothing of the interface
        const healthOnly = await scripted((req, res) => {
          res.writeHead(req.url === '/healthz' ? 200 : 404, { 'content-type': 'application/json' });
          res.end(req.url === '/healthz' ? '{"status":"ok"}' : '{}');
        });
        try {
          const prefixless = await login(healthOnly.url);
          expect(prefixless.code).toBe(5);
          expect(prefixless.stderr).toMatch(/^convx: error: http:\/\/127\.0\.0\.1:\d+\/v1 does not answer the reporting interface: GET http:\/\/127\.0\.0\.1:\d+\/v1\/conversions answered with HTTP 404\n/);
          // asked without the token: the token goes to an API only once it is known to be one
          expect(healthOnly.requests).toEqual([{ url: '/healthz', authorization: undefined }, { url: '/v1/conversions', authorization: undefined }]);
        } finally {
          await healthOnly.close();
        }
        // an API that serves validation only (no orders) accepted the token before it said so: stored, without a word
        const contactsOnly = dataset({ 'contacts.csv': readFileSync(join(SAMPLES, 'contacts.csv')) });
        const validation = await startServer({ dir: contactsOnly, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
        try {
          const accepted = await cli(['auth', 'login', '--api', `${validation.url}/v1`, '--with-token', '--profile', 'validation'], {
            env: { XDG_CONFIG_HOME: home },
            stdin: await signDevelopmentToken(SECRET, 'default', '1h'),
          });
          expect(accepted.code, accepted.stderr).toBe(0);
          expect(accepted.stderr).toMatch(/^logged in to .* as profile "validation", plugin default, token expires [^\n]*\n$/);
        } finally {
          await validation.close();
        }
      }, 30_000);
    });
  });
});

describe('shell completion (item 15)', () => {
  /** Plugins A and B, currencies EUR and CZK, countries CZ and SK, sources k1 and a1. */
  const files = {
    'orders.csv': csv(
      ['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax', 'country'],
      [
        ['A', 'oa', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12, 'CZ'],
        ['B', 'ob', 'c1', '2024-03-02T10:00:00Z', 'CZK', 200, 242, 'sk'],
      ],
    ),
    'touches.csv': csv(
      ['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'],
      [
        ['A', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k1'],
        ['B', 'c1', '2024-03-01T00:00:00Z', 'click', 'automation', 'a1'],
      ],
    ),
  };
  let dir = '';
  let bin = '';
  beforeAll(() => {
    dir = dataset(files);
    // the scripts call the command they complete: a `convx` that runs the built binary
    bin = join(tempDir(), 'convx');
    writeFileSync(bin, `#!/bin/sh\nexec node ${JSON.stringify(join(ROOT, 'bin', 'convx.js'))} "$@"\n`);
    chmodSync(bin, 0o755);
  });

  /** Runs the bash script's _convx on the words (the last one is the word at the cursor). */
  const inBash = async (words: string[], env: Record<string, string> = {}) => {
    const script = (await cli(['completion', 'bash'])).stdout;
    const file = join(tempDir(), 'c.bash');
    const quoted = [bin, ...words].map((w) => `'${w}'`).join(' ');
    writeFileSync(file, `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length}; _convx; printf '%s\\n' "\${COMPREPLY[@]}"\n`);
    const child = spawn('bash', [file], { env: { PATH: process.env.PATH, HOME: tempDir(), XDG_CONFIG_HOME: tempDir(), ...suiteThreads(), ...env } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await new Promise((r) => child.on('exit', r));
    return out.trim().split('\n').filter(Boolean);
  };
  /**
   * What the script hands those words to, in process: `convx __complete WORDS` (the script's whole
   * logic is that call, so each line below that stands for a shell nuance, a word at the cursor
   * empty or after a comma, a global flag before the command, the environment, a dataset that is
   * not there, goes through bash and the built binary; the rest asks the same engine without a
   * process per line).
   */
  const complete = async (words: string[]) => {
    const run = await cli(['__complete', ...words]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    return run.stdout.split('\n').filter(Boolean);
  };

  it('bash: commands after global flags, subcommands, flags and fixed values', async () => {
    expect(await inBash(['--data', dir, 'rep'])).toEqual(['report']);
    expect(await complete(['config', ''])).toEqual(['list', 'get', 'set', 'unset', 'profiles']);
    expect(await complete(['config', 'set', 'fo'])).toEqual(['format']);
    expect(await inBash(['config', 'set', 'format', ''])).toEqual(['table', 'json', 'jsonl', 'csv', 'tsv']);
    expect(await complete(['completion', ''])).toEqual(['bash', 'zsh', 'fish']);
    // report and trend print a page too; the other commands do not; report, order and contact print markdown (issue 22)
    expect(await complete(['report', '-o', ''])).toEqual(['table', 'json', 'jsonl', 'csv', 'tsv', 'html', 'markdown']);
    expect(await complete(['order', '-o', ''])).toEqual(['table', 'json', 'jsonl', 'csv', 'tsv', 'markdown']);
    expect(await complete(['items', '-o', ''])).toEqual(['table', 'json', 'jsonl', 'csv', 'tsv']);
    expect(await complete(['validate', '--format', ''])).toEqual(['table', 'json', 'github', 'junit', 'html', 'sarif']);
    expect(await complete(['items', '--source-type', 'a'])).toEqual(['automation']);
    expect(await complete(['report', '--bre'])).toEqual(['--breakdown']);
    // only what the command takes: the global flags it honours, -o with its own formats
    expect(await complete(['token', '--'])).toEqual(['--expires', '--issuer', '--audience', '--plugin', '--no-color', '--quiet', '--help']);
    expect(await complete(['config', 'list', '-o', ''])).toEqual(['table', 'json', 'jsonl']);
    expect(await complete(['report', '--wi'])).toEqual(['--wide']);
  }, 30_000);

  it('bash: plugins, currencies, countries and source ids of the dataset on the line (or configured)', async () => {
    expect(await complete(['report', '--data', dir, '--plugin', ''])).toEqual(['A', 'B']);
    expect(await complete(['report', '--data', dir, '--currency', ''])).toEqual(['CZK', 'EUR']);
    // the last item of a comma list, without the items it holds
    expect(await inBash(['report', '--data', dir, '--country', 'CZ,'])).toEqual(['CZ,SK']);
    expect(await complete(['items', '--data', dir, '--source', 'k'])).toEqual(['k1']);
    expect(await complete(['drill', '--data', dir, ''])).toEqual(['a1', 'k1']);
    // from the environment, as any command would read it
    expect(await inBash(['report', '--plugin', ''], { CONVX_DATA: dir })).toEqual(['A', 'B']);
    // no dataset, or a broken one: nothing, and no noise
    expect(await inBash(['report', '--data', '/nonexistent', '--plugin', ''])).toEqual([]);
  }, 30_000);

  it('bash: an alias of convx (no convx on the PATH) completes through what it stands for', async () => {
    const script = (await cli(['completion', 'bash'])).stdout;
    const file = join(tempDir(), 'alias.bash');
    const binary = join(ROOT, 'bin', 'convx.js');
    writeFileSync(
      file,
      `${script}\nalias convx='node ${binary}'\n` +
        `COMP_WORDS=(convx report --bre); COMP_CWORD=2; _convx; printf '%s\\n' "\${COMPREPLY[@]}"\n` +
        `COMP_WORDS=(convx report --data '"${dir}"' --plugin ''); COMP_CWORD=5; _convx; printf '%s\\n' "\${COMPREPLY[@]}"\n`,
    );
    const child = spawn('bash', ['--norc', file], { env: { PATH: process.env.PATH, HOME: tempDir(), XDG_CONFIG_HOME: tempDir(), ...suiteThreads() } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await new Promise((r) => child.on('exit', r));
    expect(out).toBe('--breakdown\nA\nB\n');
  }, 30_000);

  it('--values reads a dataset directory or an imported .duckdb file, and prints nothing on any error', async () => {
    const values = async (argv: string[]) => cli(['completion', '--values', ...argv]);
    expect(await values(['currencies', '--data', dir])).toEqual({ code: 0, stdout: 'CZK\nEUR\n', stderr: '' });
    expect((await values(['countries', '--data', dir])).stdout).toBe('CZ\nSK\n');
    expect((await values(['sources', '--data', SAMPLES])).stdout).toMatch(/^a-1\n.*k-1\n/s);
    const file = join(tempDir(), 'shop.duckdb');
    expect((await cli(['data', 'import', SAMPLES, '--into', file])).code).toBe(0);
    expect((await values(['sources', '--data', file])).stdout).toBe((await values(['sources', '--data', SAMPLES])).stdout);
    expect((await values(['plugins', '--data', file])).stdout).toBe('shop\n');
    for (const argv of [['plugins', '--data', '/nonexistent'], ['nonsense', '--data', dir], ['plugins']]) {
      expect(await values(argv)).toEqual({ code: 0, stdout: '', stderr: '' });
    }
  }, 60_000);

  it('--values gives up quietly when its time budget runs out', async () => {
    const ctx = await createContext(
      { stdin: new PassThrough(), stdinIsTTY: false, stdout: new Capture(), stderr: new Capture(), stdoutIsTTY: false, stderrIsTTY: false, env: { CONVX_DATA: SAMPLES, XDG_CONFIG_HOME: tempDir() }, cwd: ROOT, now: () => new Date(), onSignal: () => () => undefined },
      { color: false },
      openDefaultBackend,
      openDefaultLookups,
    );
    expect(await completionValues(ctx, 'countries', 1)).toEqual([]);
    expect(await completionValues(ctx, 'countries')).toEqual(['AT', 'CZ', 'DE', 'PL', 'SK']);
  });

  it('--values lists the profiles of the config', async () => {
    const home = tempDir();
    await cli(['config', 'set', 'format', 'csv', '--profile', 'zeta'], { env: { XDG_CONFIG_HOME: home } });
    await cli(['config', 'set', 'format', 'csv', '--profile', 'alpha'], { env: { XDG_CONFIG_HOME: home } });
    expect((await cli(['completion', '--values', 'profiles'], { env: { XDG_CONFIG_HOME: home } })).stdout).toBe('alpha\nzeta\n');
    // values of the dataset: the smartflows and countries of samples/shop
    expect((await cli(['completion', '--values', 'smartflows', '--data', SAMPLES])).stdout).toBe('sf-1\nsf-2\nsf-3\n');
    expect((await cli(['completion', '--values', 'countries', '--data', SAMPLES])).stdout).toMatch(/^AT\nCZ\nDE\n/);
  });

  describe('in API mode', () => {
    const SECRET = 'completion-secret';
    let server: RunningServer;
    beforeAll(async () => {
      server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
    });
    afterAll(async () => server?.close());

    it('asks the API for the sources and currencies of the last year, and the token for the plugin', async () => {
      const env = { CONVX_API_URL: `${server.url}/v1`, CONVX_TOKEN: await signDevelopmentToken(SECRET, 'shop', '1h') };
      const now = '2024-12-31T12:00:00Z';
      expect((await cli(['completion', '--values', 'plugins'], { env, now })).stdout).toBe('shop\n');
      expect((await cli(['completion', '--values', 'currencies'], { env, now })).stdout).toBe((await cli(['completion', '--values', 'currencies', '--data', SAMPLES])).stdout);
      expect((await cli(['completion', '--values', 'sources'], { env, now })).stdout).toMatch(/^a-1\n[\s\S]*k-1\n/);
      expect(await cli(['completion', '--values', 'sources'], { env: { ...env, CONVX_TOKEN: 'wrong' }, now })).toEqual({ code: 0, stdout: '', stderr: '' });
    });
  });

  it('zsh runs the bash function with zero-based arrays; fish asks the same engine, else completes paths', async () => {
    const zsh = (await cli(['completion', 'zsh'])).stdout;
    expect(zsh).toMatch(/^#compdef convx\n[\s\S]*bashcompinit[\s\S]*setopt localoptions ksharrays[\s\S]*complete -o default -F _convx convx/);
    const fish = (await cli(['completion', 'fish'])).stdout;
    expect(fish).toContain('set -l found (command $words[1] __complete $words[2..-1] (commandline -ct) 2>/dev/null)');
    expect(fish).toContain('__fish_complete_path (commandline -ct)');
    expect(fish).toContain("complete -c convx -f -a '(__convx_complete)'");
    // what fish offers is what the engine prints
    expect((await cli(['__complete', 'report', '--data', dir, '--plugin', ''])).stdout).toBe('A\nB\n');
    expect((await cli(['__complete', 'validate', '-o', ''])).stdout).toBe('table\njson\ngithub\njunit\nhtml\nsarif\n');
  });
});

describe('the config files under concurrent convx processes, and where a stored token goes', () => {
  const BIN = join(ROOT, 'bin', 'convx.js');
  /** Runs the built binary with a scratch config home, to its exit (or killed after timeoutMs): its code and stderr. */
  const convx = (argv: string[], env: Record<string, string>, timeoutMs = 20_000) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, ...argv], { env: { PATH: process.env.PATH, ...suiteThreads(), ...env } });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stderr });
      });
    });

  it('six config set at once keep six profiles; a logout racing a config set leaves no token', async () => {
    const home = tempDir();
    const env = { XDG_CONFIG_HOME: home };
    const runs = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => convx(['config', 'set', 'plugin', `q${n}`, '--profile', `q${n}`], env)));
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Object.keys(readJson(configFile(home)).profiles).sort()).toEqual(['q1', 'q2', 'q3', 'q4', 'q5', 'q6']);
    for (let round = 0; round < 3; round++) {
      writeFileSync(configFile(home), JSON.stringify({ profiles: { lo: { mode: 'api', api: 'https://h/v1' } } }));
      writeFileSync(credentialsFile(home), JSON.stringify({ profiles: { lo: { token: 'tok-abcdefghijklmnop' } } }));
      const [logout, set] = await Promise.all([convx(['auth', 'logout', '--profile', 'lo'], env), convx(['config', 'set', 'plugin', `p${round}`, '--profile', 'lo'], env)]);
      expect([logout.code, set.code]).toEqual([0, 0]);
      expect(existsSync(credentialsFile(home))).toBe(false);
      expect(readJson(configFile(home)).profiles.lo).toMatchObject({ api: 'https://h/v1', plugin: `p${round}` });
    }
  }, 60_000);

  it('XDG_CONFIG_HOME=/proc/self: a clear error at once, not a loop', async () => {
    const run = await convx(['config', 'set', 'format', 'csv'], { XDG_CONFIG_HOME: '/proc/self' }, 10_000);
    expect(run.signal).toBe(null);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^convx: error: cannot make the folder \/proc\/self\/convx: /);
  }, 20_000);

  it("a profile's stored token goes only to the API it was stored for; another URL is a usage error, nothing sent", async () => {
    const answer = (_req: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(401, { 'content-type': 'application/problem+json' });
      res.end('{"type":"urn:convx:problem:invalid-token","title":"no","status":401,"detail":"no"}');
    };
    const stored = await scripted(answer);
    const other = await scripted(answer);
    try {
      const home = tempDir();
      const env = { XDG_CONFIG_HOME: home };
      const token = 'stored-token-abcdefghijklmnopqrstuvwxyz';
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(home, 'convx'), { recursive: true });
      writeFileSync(configFile(home), JSON.stringify({ profiles: { default: { mode: 'api', api: stored.url } } }));
      writeFileSync(credentialsFile(home), JSON.stringify({ profiles: { default: { token } } }));
      const args = ['report', '--from', '2024-03-01', '--to', '2024-03-31'];
      for (const run of [await cli([...args, '--api', other.url], { env }), await cli(args, { env: { ...env, CONVX_API_URL: other.url } }), await cli(['auth', 'status', '--api', other.url], { env })]) {
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(
          new RegExp(`^convx: error: the token stored in profile "default" is for the API ${stored.url}, not for ${other.url} \\((--api|CONVX_API_URL)\\); convx sends a stored token only to the API it was stored for\nhint: give a token for this API: --token-file FILE \\(or - for stdin\\) or CONVX_TOKEN`),
        );
        expect(run.stderr).not.toContain(token);
      }
      expect(other.requests).toEqual([]);
      // the same API, spelled with a trailing slash: the stored token goes there
      expect((await cli([...args, '--api', `${stored.url}/`], { env })).code).toBe(4);
      expect(stored.requests.at(-1)?.authorization).toBe(`Bearer ${token}`);
      // a token given for the other API goes to it
      expect((await cli([...args, '--api', other.url], { env: { ...env, CONVX_TOKEN: 'given-token-0123456789' } })).code).toBe(4);
      expect(other.requests.map((r) => r.authorization)).toEqual(['Bearer given-token-0123456789']);
      // A profile without a delivery API: the hint names the setting that sends its token there, and it does.
      const request = join(ROOT, 'samples', 'deliveries', 'welcome.json');
      const noDelivery = await cli(['validate', request, '--delivery-api', `${other.url}/v4`], { env });
      expect(noDelivery.code).toBe(2);
      expect(noDelivery.stderr).toContain(`is for no delivery API (the profile has no deliveryApi), not for ${other.url}/v4 (--delivery-api)`);
      expect(noDelivery.stderr).toContain(`\nhint: make it the profile's, and its token goes to it: convx config set deliveryApi ${other.url}/v4 --profile default; or give a token`);
      expect(other.requests).toHaveLength(1);
      expect((await cli(['config', 'set', 'deliveryApi', `${other.url}/v4`, '--profile', 'default'], { env })).code).toBe(0);
      expect((await cli(['validate', request], { env })).code).toBe(4);
      expect(other.requests.at(-1)?.authorization).toBe(`Bearer ${token}`);
    } finally {
      await stored.close();
      await other.close();
    }
  });
});
