'use strict';
// V8's code cache for the bundle (dist/*.cjs), what Node 22 does with module.enableCompileCache()
// and Node 20 cannot: a start compiles the bundle's files from their source (the startup chunk,
// DuckDB's, the command's: some 20 ms of a report's start) and each function again when it first
// runs. The build (scripts/compile-cache.cjs) runs a few commands
// in process and keeps, per file, V8's code for every function they compiled; a start hands it to
// V8, which takes it as it stands (or, from another V8, rejects it and compiles as before).
//
// dist/compile-cache/manifest.json names the V8 it was made by and, per file, its length, the CRC-32
// of its text (as Node 22's cache keeps) and its blob. A file of another length or text (rebuilt, or
// edited in place: V8 itself checks the length only; not the file's time, which a copy or npm's
// install changes), a file that imports an ES module (import(), which code
// compiled through node:vm cannot do on Node 20 without a flag), a blob that is missing, another
// V8, or NODE_DISABLE_COMPILE_CACHE set: the file is compiled as Node does. Once V8 rejects a blob
// (made under other V8 flags than this start's, --max-old-space-size say), no other is read. Under
// a policy (--experimental-policy), whose checks Node makes as it reads a module, none is used.
const Module = require('node:module');
const { readFileSync } = require('node:fs');
const { basename, dirname, join } = require('node:path');
const vm = require('node:vm');

/** The folder of dist/ that holds the cache. */
const FOLDER = 'compile-cache';

/** True where Node checks the modules it reads against a policy, which the cache's reads would go past. */
const underPolicy = () => /--(experimental-policy|policy-integrity)\b/.test([...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' '));

/**
 * Compiles the CommonJS module `mod` from `content` through a vm.Script (with cachedData when
 * given), tells `compiled` of the script, and runs it as Module.prototype._compile does: this as
 * exports, and require, module, __filename and __dirname. Returns the script (for its createCachedData) and what the module
 * function returned.
 */
function compileWith(mod, content, filename, cachedData, compiled = () => undefined) {
  const script = new vm.Script(Module.wrap(content), { filename, cachedData });
  // said before the module runs, and with it the modules it requires
  compiled(script);
  const fn = script.runInThisContext({ displayErrors: true });
  const require = (id) => mod.require(id);
  require.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  require.resolve.paths = (request) => Module._resolveLookupPaths(request, mod);
  require.main = process.mainModule;
  require.extensions = Module._extensions;
  require.cache = Module._cache;
  return { script, result: fn.call(mod.exports, mod.exports, require, mod, filename, dirname(filename)) };
}

/**
 * Starts reading the cache of the bundle in `dist` for the modules loaded from now on; without a
 * usable cache, does nothing and returns undefined. Else returns, per file of the bundle loaded
 * since, how it was compiled: 'cached' (V8 took the cache), 'rejected' (V8 compiled it from the
 * source) or 'source' (no blob for it, or one of another length or text).
 */
function install(dist) {
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dist, FOLDER, 'manifest.json'), 'utf8'));
  } catch {
    return undefined;
  }
  if (manifest.v8 !== process.versions.v8 || underPolicy() || typeof manifest.files !== 'object' || manifest.files === null) return undefined;
  const { crc32 } = require('node:zlib');
  const compiled = {};
  let rejected = false;
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    if (dirname(filename) !== dist) return compile.call(this, content, filename);
    const name = basename(filename);
    const entry = Object.hasOwn(manifest.files, name) ? manifest.files[name] : undefined;
    let cachedData;
    try {
      if (!rejected && entry?.length === content.length && entry.crc32 === crc32(content)) cachedData = readFileSync(join(dist, FOLDER, String(entry.blob)));
    } catch {
      // no blob: from the source
    }
    if (!cachedData) {
      compiled[name] = 'source';
      return compile.call(this, content, filename);
    }
    return compileWith(this, content, filename, cachedData, (script) => {
      rejected ||= script.cachedDataRejected === true;
      compiled[name] = script.cachedDataRejected ? 'rejected' : 'cached';
    }).result;
  };
  return compiled;
}

/**
 * For the build: compiles the files named (of `dist`) through vm.Script from now on and returns
 * a function that gives each one's code cache, with what V8 compiled of it until then.
 */
function record(dist, names) {
  const { crc32 } = require('node:zlib');
  const scripts = new Map();
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    if (dirname(filename) !== dist || !names.has(basename(filename))) return compile.call(this, content, filename);
    const { script, result } = compileWith(this, content, filename);
    scripts.set(basename(filename), { length: content.length, text: crc32(content), script });
    return result;
  };
  return () => [...scripts].map(([name, { length, text, script }]) => ({ name, length, crc32: text, data: script.createCachedData() }));
}

module.exports = { FOLDER, install, record };
