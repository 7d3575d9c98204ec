/**
 * `convx data shards DIR --shards N --out OUT`: spreads the plugins' files of DIR (written by
 * `data import --split-plugins`) over N `convx serve` shards behind HAProxy. OUT holds the plan:
 * `shards.map` (HAProxy's map of plugin to shard), `haproxy.cfg`, `503.http` (the problem+json
 * answer of a shard that is down) and `shard_K/`, the files each shard serves (symbolic links to
 * DIR's files: `convx serve --data OUT/shard_K/`). Written beside OUT first and renamed whole.
 */
import { existsSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import { explicitJson } from './config.js';
import { megabytes, wholeNumber } from './data-common.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { discoverTables } from '../local/dataset/discover.js';
import { pluginFileEntries } from '../server/plugin-files.js';
import { haproxyConfig, planShards, shardMap, unavailableResponse, type PluginFile, type Shard } from '../server/shards.js';
import { plural } from '../words.js';
import { safeValue } from '../output/terminal.js';

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$/;

/** A host:port of --servers or --listen, checked: a port from 1 to 65535, as HAProxy takes it. */
function checkedHostPort(value: string, flag: string): string {
  const port = Number(value.split(':').at(-1));
  if (!HOST_PORT.test(value) || port < 1 || port > 65535) throw new UsageError(`${flag}: "${safeValue(value)}" is not host:port (a port from 1 to 65535)`);
  return value;
}

/** The --host a shard's convx serve needs to listen where HAProxy reaches it: none for serve's default, 127.0.0.1. */
function serveHost(server: string): string {
  const host = hostOf(server);
  return host === '127.0.0.1' ? '' : ` --host ${host}`;
}

/** The host of a host:port as convx serve --host takes it (an IPv6 address without its brackets). */
function hostOf(server: string): string {
  return server.slice(0, server.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
}

/** The plugins' files of dir: every `<plugin>.duckdb`, by plugin. */
function pluginFiles(dir: string): PluginFile[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dir} is not a directory (the plugins' files written by convx data import --split-plugins)`);
  const files = pluginFileEntries(dir).map(({ plugin, file, problem }) => {
    if (problem !== undefined) throw new DataError(`${file}: "${safeValue(plugin)}" ${problem}`);
    return { plugin, file, bytes: statSync(file).size };
  });
  if (files.length === 0) {
    // A dataset's folder (its tables at the top) is what --split-plugins reads, not where its files go.
    let dataset: boolean;
    try {
      dataset = discoverTables(dir).size > 0;
    } catch {
      dataset = true; // files of a dataset's that cannot be read as one
    }
    const into = dataset ? join(dirname(dir), `${basename(dir)}-plugins`) : dir;
    throw new DataError(
      dataset
        ? `${dir} is a dataset's folder, not its plugins' files: write one file per plugin with convx data import ${dir} --split-plugins --into ${into}/, then plan from that: convx data shards ${into}/`
        : `${dir} holds no .duckdb file: write one per plugin with convx data import DATASET --split-plugins --into ${into}`,
    );
  }
  return files;
}


/** The shards' addresses: --servers as given, else 127.0.0.1 from port 8081 on. */
function serversOf(flags: CommandFlags<'data shards'>): string[] {
  const shards = flags.shards === undefined ? undefined : wholeNumber('shards', flags.shards, 1, 256);
  const servers = flags.servers?.split(',').map((s) => s.trim()).filter(Boolean);
  if (!servers && !shards) throw new UsageError('--shards <n> is required (or --servers host:port,host:port,...)');
  if (servers) {
    for (const server of servers) checkedHostPort(server, '--servers');
    // Two shards at one address: one convx serve would answer both shards' plugins from one shard's files.
    // An address as it is reached: a host in any case, localhost as 127.0.0.1 (where HAProxy resolves it).
    const reached = servers.map((server) => server.toLowerCase().replace(/^localhost:/, '127.0.0.1:'));
    const at = reached.findIndex((server, i) => reached.indexOf(server) !== i);
    if (at >= 0) {
      const first = servers[reached.indexOf(reached[at]!)]!;
      const named = first === servers[at] ? `${safeValue(first)} twice` : `one address twice, ${safeValue(first)} and ${safeValue(servers[at]!)}`;
      throw new UsageError(`--servers names ${named}: each shard is a convx serve of its own`);
    }
    if (shards && shards !== servers.length) throw new UsageError(`--shards ${shards} but --servers names ${plural(servers.length, 'server')}`);
    return servers;
  }
  return Array.from({ length: shards! }, (_, i) => `127.0.0.1:${8081 + i}`);
}

/**
 * haproxy.cfg names OUT's map and 503 answer in a sample fetch's arguments and in errorfile, where
 * a space, a comma, a bracket, a quote, a backslash or a # would end or break the word.
 */
function assertHaproxyPath(out: string): void {
  const bad = /[\s,()'"\\#%{}[\]]/.exec(out);
  if (bad) throw new UsageError(`--out: ${JSON.stringify(out)} holds ${JSON.stringify(bad[0])}, which haproxy.cfg cannot name the map and 503 answer with`, [], 'choose a path of letters, digits and . _ - /');
}

/** Writes the plan into a fresh directory beside out, then renames it to out (replacing it with --force). */
function writePlan(out: string, shards: readonly Shard[], listen: string, force: boolean): void {
  if (existsSync(out) && !force) throw new UsageError(`${out} exists: pass --force to replace it`);
  const parent = dirname(out);
  if (!existsSync(parent)) throw new UsageError(`the folder ${parent} does not exist`);
  const staging = join(parent, `.${basename(out)}.${process.pid}.tmp`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  try {
    writeFileSync(join(staging, 'shards.map'), shardMap(shards));
    writeFileSync(join(staging, '503.http'), unavailableResponse());
    writeFileSync(join(staging, 'haproxy.cfg'), haproxyConfig(shards, { listen, mapFile: join(out, 'shards.map'), errorFile: join(out, '503.http') }));
    for (const shard of shards) {
      mkdirSync(join(staging, shard.name));
      for (const p of shard.plugins) symlinkSync(p.file, join(staging, shard.name, `${p.plugin}.duckdb`));
    }
    if (existsSync(out)) {
      const old = `${staging}.old`;
      renameSync(out, old);
      renameSync(staging, out);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(staging, out);
    }
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

export default defineHandler<CommandFlags<'data shards'>>({
  async run(ctx, args, flags) {
    if (!flags.out) throw new UsageError('--out <dir> is required: the directory to write the plan into');
    const listen = flags.listen;
    checkedHostPort(listen, '--listen');
    const servers = serversOf(flags);
    const dir = ctx.resolvePath(args[0]!);
    // The links point at absolute paths, so that OUT may move apart from DIR.
    const files = pluginFiles(dir);
    const out = ctx.resolvePath(flags.out);
    if (out === dir || out.startsWith(`${dir}/`)) throw new UsageError('--out must not lie inside the plugins\' directory');
    assertHaproxyPath(out);
    const shards = planShards(files, servers);
    writePlan(out, shards, listen, flags.force ?? false);
    const empty = shards.filter((s) => s.plugins.length === 0).map((s) => s.name);
    if (empty.length) {
      ctx.log.warn(
        `${plural(servers.length, 'shard')} for ${plural(files.length, 'plugin file')}: ${empty.join(', ')} ${empty.length === 1 ? 'holds' : 'hold'} none, and convx serve refuses an empty folder (plan at most ${plural(files.length, 'shard')}, or start ${empty.length === 1 ? 'it' : 'them'} once ${empty.length === 1 ? 'it holds' : 'they hold'} files)`,
      );
    }
    if (explicitJson(ctx)) {
      await ctx.output.json({
        out,
        shards: shards.map((s) => ({ name: s.name, server: s.server, bytes: s.bytes, plugins: s.plugins.map((p) => p.plugin) })),
      });
      return;
    }
    const lines = shards.map((s) => `${s.name}  ${s.server}  ${plural(s.plugins.length, 'plugin')}, ${megabytes(s.bytes)}: ${s.plugins.map((p) => p.plugin).join(', ') || '-'}`);
    await ctx.output.text(`${lines.join('\n')}\n`);
    // Each shard's own command (its folder, host and port), on the machine whose address it is.
    const written = flags.out!;
    // A shard without files is left out: convx serve refuses an empty folder (the warning above names it).
    const starts = shards.filter((s) => s.plugins.length > 0).map((s) => `  convx serve --data ${join(written, s.name)}${serveHost(s.server)} --port ${s.server.split(':').at(-1)} --no-health-log`);
    ctx.log.info(
      `wrote ${written}: shards.map, haproxy.cfg, 503.http and a folder per shard; start each shard (--no-health-log: HAProxy checks /healthz every second), each with the tokens' key (CONVX_JWT_SECRET, --jwt-public-key or --jwks: a shard verifies every token):\n${starts.join('\n')}\nthen HAProxy:\n  haproxy -f ${join(written, 'haproxy.cfg')}`,
    );
  },
});
