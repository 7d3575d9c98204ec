/**
 * The config lock (config.json.lock) under the moves of other processes, played by a test through
 * LOCK_STEPS between judging a lock and acting on it: a live lock is never moved or removed, a
 * second takeover waits for the first, a lock of this process's own pid left by an earlier process
 * is taken over, a lock whose token could not be written is removed, and a killed process's
 * temporary files do not pile up. In process, a scratch config home per test.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_STEPS, lockPath, updateConfig } from '../src/config-file.js';
import { ConvxError } from '../src/errors.js';
import { alive } from '../src/pid.js';
import { tempDir } from './helpers.js';

const HOST = hostname();

/** A config.json of no profiles in a scratch folder. */
function configFile(): string {
  const dir = join(tempDir(), 'convx');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'config.json');
  writeFileSync(file, '{"profiles":{}}\n', { mode: 0o600 });
  return file;
}

/** A pid no process has. */
function gonePid(): number {
  for (let pid = 4_194_303; ; pid--) if (!alive(pid)) return pid;
}

/** The error fn throws, else undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

const profilesOf = (file: string) => JSON.parse(readFileSync(file, 'utf8')).profiles;

afterEach(() => {
  delete LOCK_STEPS.judged;
  delete LOCK_STEPS.written;
});

describe('taking over a lock left behind', () => {
  it('never moves or removes a live lock: one that replaced the dead lock after it was judged stays, and no third process gets a lock beside it', () => {
    const file = configFile();
    const lock = lockPath(file);
    writeFileSync(lock, `${gonePid()}\n${HOST}\ndead-token\n`);
    // B, a live convx (the test runner's parent process), took over the dead lock just after A judged it
    const b = `${process.ppid}\n${HOST}\nb-token\n`;
    let cGotALock = false;
    LOCK_STEPS.judged = (_path, text, leftBehind) => {
      if (leftBehind && text.includes('dead-token') && readFileSync(lock, 'utf8') !== b) writeFileSync(lock, b);
      else if (!leftBehind && text === b && !cGotALock) {
        // C tries the lock whenever A looks at B's: it gets one only where no lock file is there
        try {
          closeSync(openSync(lock, 'wx'));
          writeFileSync(lock, `${process.ppid}\n${HOST}\nc-token\n`);
          cGotALock = true;
        } catch {
          // B's lock is there: C waits
        }
      }
    };
    let ran = false;
    const error = thrown(() => updateConfig(file, () => void (ran = true), 300));
    expect(error).toBeInstanceOf(ConvxError);
    expect((error as ConvxError).message).toMatch(new RegExp(`another convx \\(pid ${process.ppid}\\) has held its lock`));
    expect([ran, cGotALock]).toEqual([false, false]);
    expect(readFileSync(lock, 'utf8')).toBe(b);
  });

  it('a second takeover of the same dead lock waits for the first (config.json.lock.takeover), which alone removes it', () => {
    const file = configFile();
    const lock = lockPath(file);
    writeFileSync(lock, `${gonePid()}\n${HOST}\ndead-token\n`);
    let judgments = 0;
    let second: unknown;
    let secondRan = false;
    LOCK_STEPS.judged = () => {
      // the second look at the dead lock: A, about to remove it; B judges it dead too
      if (++judgments === 2) second = thrown(() => updateConfig(file, () => void (secondRan = true), 200));
    };
    updateConfig(file, (config) => void (config.profiles.a = { format: 'csv' }), 300);
    expect(second).toBeInstanceOf(ConvxError);
    expect(secondRan).toBe(false);
    expect(profilesOf(file)).toEqual({ a: { format: 'csv' } });
    expect(readdirSync(join(file, '..')).sort()).toEqual(['config.json']);
  });

  it("a lock naming this process's own pid with another token (pid 1 of a restarted container) is taken over once a second old; a fresh one waits", () => {
    const file = configFile();
    const lock = lockPath(file);
    writeFileSync(lock, `${process.pid}\n${HOST}\nearlier-run\n`);
    const before = (Date.now() - 5000) / 1000;
    utimesSync(lock, before, before);
    updateConfig(file, (config) => void (config.profiles.a = { format: 'csv' }), 300);
    expect(profilesOf(file)).toEqual({ a: { format: 'csv' } });
    expect(existsSync(lock)).toBe(false);
    // a twin (another container of the same pid and hostname) holds its lock for milliseconds: not taken
    writeFileSync(lock, `${process.pid}\n${HOST}\ntwin\n`);
    expect(thrown(() => updateConfig(file, () => undefined, 300))).toBeInstanceOf(ConvxError);
    expect(readFileSync(lock, 'utf8')).toContain('twin');
  });
});

describe('the lock of this process', () => {
  it('a lock whose token cannot be written (a full disk) is removed, and the error names the file', () => {
    const file = configFile();
    LOCK_STEPS.written = () => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    const error = thrown(() => updateConfig(file, () => undefined, 300));
    expect(error).toBeInstanceOf(ConvxError);
    expect((error as ConvxError).message).toMatch(new RegExp(`^cannot lock ${file}: `));
    expect(existsSync(lockPath(file))).toBe(false);
    delete LOCK_STEPS.written;
    updateConfig(file, (config) => void (config.profiles.a = {}), 300);
    expect(profilesOf(file)).toEqual({ a: {} });
  });

  it('is removed on release only while it is still its own', () => {
    const file = configFile();
    const other = `${process.ppid}\n${HOST}\nother\n`;
    updateConfig(file, () => writeFileSync(lockPath(file), other), 300);
    expect(readFileSync(lockPath(file), 'utf8')).toBe(other);
  });

  it("removes a killed process's temporary files and an older convx's *.stale once a minute old, and nothing else", () => {
    const file = configFile();
    const dir = join(file, '..');
    const old = ['config.json.1234.0a1b2c3d.tmp', 'credentials.json.1234.0a1b2c3d4e5f.tmp', 'config.json.lock.77.deadbeef.stale'];
    const kept = ['config.json.bak', 'config.json.1234.x.tmp', 'notes.txt.1.ab.tmp'];
    const then = (Date.now() - 120_000) / 1000;
    for (const name of [...old, ...kept]) {
      writeFileSync(join(dir, name), 'x');
      utimesSync(join(dir, name), then, then);
    }
    writeFileSync(join(dir, 'config.json.99.0f0f0f0f.tmp'), 'a write of now');
    updateConfig(file, (config) => void (config.profiles.a = {}), 300);
    expect(readdirSync(dir).sort()).toEqual(['config.json', 'config.json.99.0f0f0f0f.tmp', ...kept].sort());
  });
});
