/**
 * Every command's metadata (name, summary, arguments, flags, examples), in the
 * order `convx --help` lists them, and how to load its handler. `--help`, a
 * command's `--help` and shell completion read only this; a command's module
 * (and through it DuckDB, the server, jose ...) is imported when it runs.
 */
import { PROFILE_KEYS } from '../model/settings.js';
import { OPTIONS, VALIDATE_FORMATS } from './options.js';
import type { CommandDefinition } from './registry.js';

export const COMMANDS: readonly CommandDefinition[] = [
  {
    name: 'report',
    summary: 'conversions per attributing source (GET /conversions)',
    options: OPTIONS.report,
    examples: [
      'convx report --data samples/shop --from 2024-03-01 --compare previous --tz Europe/Prague   # no --to: the 30 days from --from (neither: the 30 days ending today)',
      'convx report --from 2024-01-01 --to 2024-04-30 --country cz,sk --currency EUR -q spring --breakdown --all -o csv > sources.csv',
      'convx report --month 2024-03 -o html --output report.html --open   # a page to share: every row, a chart',
    ],
    load: async () => (await import('./report.js')).default,
  },
  {
    name: 'items',
    summary: 'individual conversion records (GET /conversions/items)',
    options: OPTIONS.items,
    examples: [
      'convx items --data samples/shop --from 2024-03-01 --to 2024-03-31',
      'convx items --from 2024-01-01 --to 2024-04-30 --smartflow sf-1 --country cz,sk --fields orderId,datetime -o json',
      'convx items --from 2024-01-01 --to 2024-12-31 --all -o csv > conversions.csv',
    ],
    load: async () => (await import('./items.js')).default,
  },
  {
    name: 'trend',
    summary: 'conversions over time: one row per hour, day, ISO week or month of the period (GET /conversions/timeframes)',
    options: OPTIONS.trend,
    examples: [
      'convx trend --data samples/shop --from 2024-03-01 --to 2024-03-31',
      'convx trend --from 2024-01-01 --to 2024-06-30 --by week --currency EUR -o csv > weeks.csv',
      'convx trend --from 2024-03-01 --to 2024-03-31 --per-source --top 3 -o json',
      'convx trend --from 2024-01-01 --to 2024-06-30 --by week --per-source -o html --output weeks.html   # a page: chart and every bucket',
    ],
    load: async () => (await import('./trend.js')).default,
  },
  {
    name: 'total',
    summary: "the period's conversions over every source as one row (GET /conversions/total)",
    options: OPTIONS.total,
    examples: [
      'convx total --data samples/shop --from 2024-03-01 --to 2024-03-31',
      'convx total --from 2024-01-01 --to 2024-12-31 --country cz,sk -o json',
      'convx total --from 2024-03-01 --to 2024-03-31 --breakdown -o csv',
    ],
    load: async () => (await import('./total.js')).default,
  },
  {
    name: 'order',
    summary: 'which source produced an order, or why none did',
    args: '[orderId...]',
    options: OPTIONS.order,
    examples: [
      'convx order o-2 --data samples/shop',
      'convx order o-2 o-7 -o json   # several: one answer each (--stdin: ids one a line)',
      'convx order o-2 --api https://host/v1 --token-file token.txt',
    ],
    load: async () => (await import('./order.js')).default,
  },
  {
    name: 'contact',
    summary: "a contact's conversions, the clicks that decided them and those that did not count (and why)",
    args: '[contact...]',
    options: OPTIONS.contact,
    examples: [
      'convx contact c-11 --data samples/shop',
      'convx contact Greta.Prochazka2@example.com        # by e-mail, any case',
      'convx contact CL0000011 -o json                   # by client contact id',
      'convx contact c-11 -o csv > clicks.csv            # one row per click',
      'convx contact c-11 c-2 -o jsonl                   # several: one answer a line',
    ],
    load: async () => (await import('./contact.js')).default,
  },
  {
    name: 'drill',
    summary: 'the conversion records behind a report row',
    args: '<detailUrl|sourceId|name>',
    options: OPTIONS.drill,
    examples: [
      'convx drill /v1/campaigns/k-3/conversions --from 2024-03-01 --to 2024-03-31',
      'convx drill /v1/deliveries/sf-1/d-2/conversions --month 2024-03',
      "convx drill 'Spring sale' --from 2024-01-01 --to 2024-04-30 --all -o csv   # a source by its name (or automation:a-2, or sf-1: a smartflow)",
    ],
    load: async () => (await import('./drill.js')).default,
  },
  {
    name: 'validate',
    summary: 'dry-run an e-mail delivery: audience, suppression, languages, samples and findings',
    args: '<request...>',
    formats: VALIDATE_FORMATS,
    options: OPTIONS.validate,
    examples: [
      'convx validate samples/deliveries/welcome.json --data samples/shop',
      "convx validate 'samples/deliveries/welcome*.json' -o github --max-warnings 0 --ignore missing_text_part,language_fallback   # in a CI job; -o junit > validation.xml for test reports",
      'cat samples/deliveries/welcome.json | convx validate - --api https://host/v1 --delivery-api https://host/v4 --token-file token.txt',
    ],
    load: async () => (await import('./validate.js')).default,
  },
  {
    name: 'serve',
    summary: 'serve the reporting interface over HTTP from a local dataset',
    options: OPTIONS.serve,
    examples: [
      'CONVX_JWT_SECRET=dev-secret convx serve --data samples/shop',
      'convx serve --data samples/shop --port 9000 --jwks keys.json',
      'curl -H "Authorization: Bearer $(CONVX_JWT_SECRET=dev-secret convx token --plugin shop)" \\\n    "http://127.0.0.1:8080/v1/conversions?dateFrom=2024-03-01&dateTo=2024-03-31"',
    ],
    load: async () => (await import('./serve.js')).default,
  },
  {
    name: 'token',
    summary: 'print a signed development token for `convx serve` (HS256 with CONVX_JWT_SECRET)',
    options: OPTIONS.token,
    requiredGlobals: ['--plugin'],
    examples: [
      'CONVX_JWT_SECRET=dev-secret convx token --plugin shop',
      'convx token --plugin shop --expires 7d > token.txt',
      'convx token --plugin shop --issuer https://id.example.com --audience convx',
    ],
    load: async () => (await import('./token.js')).default,
  },
  {
    name: 'init',
    toleratesWrongSettings: true,
    createsProfile: true,
    summary: 'set up a config profile interactively: mode, dataset or API, token, default format',
    options: OPTIONS.init,
    examples: ['convx init', 'convx init --profile staging'],
    load: async () => (await import('./init.js')).default,
  },
  {
    name: 'auth login',
    toleratesWrongSettings: true,
    createsProfile: true,
    summary: 'store an API URL and token in the config profile',
    options: OPTIONS['auth login'],
    examples: [
      'convx auth login --api https://reports.example.com/v1          # prompts for the token',
      'convx auth login --api http://127.0.0.1:8080/v1 --with-token < token.txt',
      'convx token --plugin shop | convx auth login --api http://127.0.0.1:8080/v1 --with-token --profile dev',
    ],
    load: async () => (await import('./auth.js')).authLogin,
  },
  {
    name: 'auth status',
    summary: 'show the profile, the token (masked), its plugin and expiry, and whether the API accepts it',
    examples: ['convx auth status', 'convx auth status --profile dev -o json'],
    load: async () => (await import('./auth.js')).authStatus,
  },
  {
    name: 'auth logout',
    toleratesWrongSettings: true,
    summary: 'remove the stored token of the profile',
    examples: ['convx auth logout', 'convx auth logout --profile dev'],
    load: async () => (await import('./auth.js')).authLogout,
  },
  {
    name: 'data check',
    summary: 'report every problem and integrity finding of a dataset (the folder given, else --data or CONVX_DATA), without computing a report',
    args: '[dir]',
    examples: ['convx data check samples/shop', 'convx data check samples/shop -o json', 'CONVX_DATA=samples/shop convx data check'],
    load: async () => (await import('./data.js')).dataCheck,
  },
  {
    name: 'data import',
    summary: 'check a dataset once and write it as one .duckdb file, attributed, that every command reads with --data',
    args: '<dir>',
    options: OPTIONS['data import'],
    examples: [
      'convx data import samples/shop --into shop.duckdb',
      'convx report --data shop.duckdb --from 2024-03-01 --to 2024-03-31',
      'convx serve --data shop.duckdb   # ready at once, even for millions of orders',
      'convx data import samples/shop --split-plugins --into plugins/  # plugins/<plugin>.duckdb; convx serve --data plugins/',
      'convx serve --data plugins/ --max-open-plugins 4 --max-plugin-memory 2g   # at most 4 plugin files open, their memory within 2 GiB',
      "convx data import samples/shop --into shop.duckdb --append  # adds the new files of the tables' folders (a new day's); kill -HUP a server to serve them",
    ],
    load: async () => (await import('./data.js')).dataImport,
  },
  {
    name: 'data generate',
    summary: 'write a deterministic synthetic dataset (for demos, tests and benchmarks)',
    options: OPTIONS['data generate'],
    examples: [
      'convx data generate --out demo-shop',
      'convx data generate --out big-shop --orders 2000000 --touches 10000000 --contacts 500000 --file-format parquet',
      'convx data generate --out tenants --plugins 3 --seed 42',
      'convx data generate --out campaigns --sources 500 --currencies 5 --orders 1000000 --touches 5000000 --contacts 250000 --file-format parquet',
    ],
    load: async () => (await import('./data.js')).dataGenerate,
  },
  {
    name: 'data shards',
    summary: "spread the plugins' files over convx serve shards behind HAProxy: the shard map, haproxy.cfg and each shard's files",
    args: '<dir>',
    options: OPTIONS['data shards'],
    examples: [
      'convx data import samples/shop --split-plugins --into plugins/',
      'convx data shards plugins/ --shards 2 --out deploy/',
      'convx data shards plugins/ --servers 10.0.0.11:8080,10.0.0.12:8080 --listen 0.0.0.0:80 --out deploy/ --force',
    ],
    load: async () => (await import('./shards.js')).default,
  },
  {
    name: 'completion',
    toleratesWrongSettings: true,
    configOptional: true,
    summary: 'print a shell completion script (bash, zsh, fish): commands, flags, formats, and values from the configured dataset or API',
    args: '[shell]',
    options: OPTIONS.completion,
    examples: [
      'eval "$(convx completion bash)"   # in ~/.bashrc',
      'eval "$(convx completion zsh)"    # in ~/.zshrc',
      'convx completion fish > ~/.config/fish/completions/convx.fish',
      'convx completion --values currencies --data samples/shop',
    ],
    load: async () => (await import('./completion.js')).default,
  },
  {
    name: 'config list',
    toleratesWrongSettings: true,
    summary: "print the profile's settings (key=value; the token masked)",
    examples: ['convx config list', 'convx config list --profile shop -o json'],
    load: async () => (await import('./config.js')).configList,
  },
  {
    name: 'config get',
    toleratesWrongSettings: true,
    summary: 'print one setting of the profile (when it is not set: nothing on stdout, an error and the not-found exit code)',
    args: '<key>',
    examples: ['convx config get data', 'convx config get api --profile staging'],
    load: async () => (await import('./config.js')).configGet,
  },
  {
    name: 'config set',
    toleratesWrongSettings: true,
    repairsSetting: true,
    createsProfile: true,
    summary: `set a setting of the profile: ${PROFILE_KEYS.join(', ')}, or defaultProfile (tokens: convx auth login)`,
    args: '<key> <value>',
    examples: ['convx config set data samples/shop', 'convx config set format csv --profile shop', 'convx config set defaultProfile shop'],
    load: async () => (await import('./config.js')).configSet,
  },
  {
    name: 'config unset',
    toleratesWrongSettings: true,
    repairsSetting: true,
    summary: 'remove a setting of the profile',
    args: '<key>',
    examples: ['convx config unset plugin', 'convx config unset format --profile shop'],
    load: async () => (await import('./config.js')).configUnset,
  },
  {
    name: 'config profiles',
    toleratesWrongSettings: true,
    summary: 'list the profiles: mode, dataset or API, whether a token is stored; * marks the one in use',
    examples: ['convx config profiles', 'convx config profiles -o json'],
    load: async () => (await import('./config.js')).configProfiles,
  },
];

export const GROUPS: Record<string, string> = {
  data: 'dataset tools: check, import, generate, shards',
  auth: 'API credentials: login, status, logout',
  config: 'settings of a profile: list, get, set, unset, profiles',
};
