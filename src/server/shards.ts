/**
 * Shards behind HAProxy (`convx data shards`): which shard serves which plugin, and the files
 * that say so. Pure: plugins and their sizes in, a plan and file texts out.
 *
 * HAProxy (2.5 or newer) routes a request on the `plugin` claim of its bearer token
 * (`http_auth_bearer,jwt_payload_query('$.plugin')`), looked up in a map file of
 * `<plugin> <backend>` lines. HAProxy does not verify the token: the shard does, so a forged
 * claim only reaches a shard that refuses it. A request without a claim (no token, /healthz)
 * and a plugin the map does not name go to the first shard, which answers them as any convx
 * server does (403, 404 ...).
 */

/** A plugin's imported file and its size in bytes. */
export interface PluginFile {
  plugin: string;
  file: string;
  bytes: number;
}

export interface Shard {
  /** The HAProxy backend's name: shard_1, shard_2 ... */
  name: string;
  /** host:port of the convx serve of this shard. */
  server: string;
  plugins: PluginFile[];
  bytes: number;
}

/**
 * Plugins spread over `count` shards by size: the largest first, each to the shard holding the
 * fewest bytes so far (the first such shard on a tie). The same files give the same plan.
 */
export function planShards(files: readonly PluginFile[], servers: readonly string[]): Shard[] {
  const shards: Shard[] = servers.map((server, i) => ({ name: `shard_${i + 1}`, server, plugins: [], bytes: 0 }));
  const bySize = [...files].sort((a, b) => b.bytes - a.bytes || (a.plugin < b.plugin ? -1 : a.plugin > b.plugin ? 1 : 0));
  for (const file of bySize) {
    const lightest = shards.reduce((best, shard) => (shard.bytes < best.bytes ? shard : best));
    lightest.plugins.push(file);
    lightest.bytes += file.bytes;
  }
  for (const shard of shards) shard.plugins.sort((a, b) => (a.plugin < b.plugin ? -1 : 1));
  return shards;
}

/** The map file HAProxy reads: one `<plugin> <backend>` line per plugin, sorted by plugin. */
export function shardMap(shards: readonly Shard[]): string {
  const lines = shards.flatMap((shard) => shard.plugins.map((p) => `${p.plugin} ${shard.name}`));
  return `${lines.sort().join('\n')}\n`;
}

/** The answer HAProxy gives when a plugin's shard does not answer: a problem+json 503, as convx answers. */
export function unavailableResponse(): string {
  const body = JSON.stringify({
    type: 'urn:convx:problem:shard-unavailable',
    title: 'Service Unavailable',
    status: 503,
    detail: "the server of this plugin's data is not answering; retry later",
  });
  return [
    'HTTP/1.1 503 Service Unavailable',
    'Content-Type: application/problem+json',
    'Cache-Control: no-store',
    'Retry-After: 5',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

export interface HaproxyOptions {
  /** Where HAProxy listens: host:port. */
  listen: string;
  /** The absolute paths of the map file and of the 503 answer. */
  mapFile: string;
  errorFile: string;
}

/** A complete haproxy.cfg for the plan: one frontend routing on the plugin claim, a backend per shard with a health check. */
export function haproxyConfig(shards: readonly Shard[], options: HaproxyOptions): string {
  const backends = shards.flatMap((shard) => [
    `backend ${shard.name}`,
    `  # ${shard.plugins.length} plugin(s), ${shard.bytes} bytes: ${shard.plugins.map((p) => p.plugin).join(', ') || '(none)'}`,
    '  option httpchk GET /healthz',
    '  retries 1',
    `  server ${shard.name} ${shard.server} check inter 1s fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down`,
    '',
  ]);
  return [
    '# Written by convx data shards. HAProxy 2.5 or newer (jwt_payload_query).',
    'global',
    '  log stderr format raw local0 notice',
    '',
    'defaults',
    '  mode http',
    '  log global',
    '  option httplog',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  # A shard that does not answer: a problem+json 503.',
    `  errorfile 503 ${options.errorFile}`,
    '',
    'frontend convx',
    `  bind ${options.listen}`,
    "  # The token's plugin claim, unverified: the shard verifies the token.",
    "  http-request set-var(txn.plugin) http_auth_bearer,jwt_payload_query('$.plugin')",
    `  use_backend %[var(txn.plugin),map(${options.mapFile},${shards[0]!.name})]`,
    `  default_backend ${shards[0]!.name}`,
    '',
    ...backends,
  ].join('\n');
}
