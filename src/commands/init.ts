import { existsSync } from 'node:fs';
import { hasCredentials, profileFlag as flagOfProfile, wrongSettings, type Profile } from '../config.js';
import type { Context } from '../context.js';
import { ConvxError, UsageError } from '../errors.js';
import { FORMATS } from '../output/formats.js';
import { tokenProblem } from '../model/token-text.js';
import { saveProfile } from './auth.js';
import { checkedSetting } from './config.js';
import type { CommandFlags } from './options.js';
import { loadPrompts, type Prompts } from './prompts.js';
import { defineHandler } from './registry.js';

const NO_CREDENTIALS = 'no user name or password in the URL, please: the token (next) authenticates';

/** The prompts' streams: the terminal's stdin, and stderr (stdout stays for data). */
type PromptIo = { input: NodeJS.ReadableStream; output: NodeJS.WritableStream };

/**
 * Asks for a profile's mode, format, and dataset or API and token. A profile that exists already
 * keeps what init does not ask about (tz, plugin, tracking settings, the other mode's dataset or
 * API); its stored answers are the defaults, and an empty token keeps the stored one.
 */
export default defineHandler<CommandFlags<'init'>>({
  async run(ctx, _args, flags) {
    if (!ctx.io.stdinIsTTY) {
      throw new UsageError(
        'convx init asks questions and needs a terminal. Without one, use flags or the environment: ' +
          '`convx auth login --api URL --with-token < token.txt`, or CONVX_DATA, CONVX_API_URL and CONVX_TOKEN',
      );
    }
    const prompts = await loadPrompts();
    const io = { input: ctx.io.stdin, output: ctx.io.stderr };
    const stored: Profile = ctx.config.profiles[ctx.settings.profile] ?? {};
    const mode = await prompts.select(
      {
        message: 'Where does the data come from?',
        choices: [
          { name: 'exported files on this machine (local mode)', value: 'local' as const },
          { name: 'a running service (API mode)', value: 'api' as const },
        ],
        ...(stored.mode ? { default: stored.mode } : {}),
      },
      io,
    );
    const format = await prompts.select(
      {
        message: 'Default output format',
        choices: [{ name: 'table on a terminal, tsv otherwise', value: '' }, ...FORMATS.map((f) => ({ name: f, value: f }))],
        default: stored.format ?? '',
      },
      io,
    );
    if (mode === 'local') await initLocal(ctx, stored, format, prompts, io);
    else await initApi(ctx, stored, format, flags.verify, prompts, io);
  },
});

/** ` --profile NAME` for the command a saved profile is used with (config.ts, profileFlag). */
function profileFlag(ctx: Context, name: string): string {
  return flagOfProfile(name, ctx.io.env, ctx.config);
}

/**
 * What init leaves wrong in the profile (the settings it does not ask, which the read left unused:
 * config-file.ts, ConfigRead), as the end of its message; undefined where nothing is.
 */
function stillWrong(ctx: Context, name: string, answers: readonly string[]): string | undefined {
  const keys = wrongSettings(ctx.config, name)
    .map((w) => w.key)
    .filter((key) => !answers.includes(key) && key !== 'token');
  if (keys.length === 0) return undefined;
  return `it still holds wrong settings (${keys.join(', ')}), which stop the commands that use it: fix them with convx config set|unset KEY${profileFlag(ctx, name)}`;
}

/** The profile with init's answers: what was asked replaced (an empty format is no format), the rest kept. */
function answeredProfile(profile: Profile, answers: Profile, format: string): Profile {
  const { format: _asked, ...kept } = profile;
  return { ...kept, ...answers, ...(format ? { format } : {}) };
}

async function initLocal(ctx: Context, stored: Profile, format: string, { input }: Prompts, io: PromptIo): Promise<void> {
  const name = ctx.settings.profile;
  // No default but the stored one: an empty answer saves no dataset (never the directory convx happens to run in).
  const typed = (
    await input(
      {
        message: stored.data ? 'Dataset directory or .duckdb file' : 'Dataset directory or .duckdb file (empty: none, pass --data each time)',
        ...(stored.data ? { default: stored.data } : {}),
        validate: (value) => (!value.trim() || existsSync(ctx.resolvePath(value.trim())) ? true : `${value.trim()} does not exist`),
      },
      io,
    )
  ).trim();
  const data = typed ? checkedSetting(ctx, 'data', typed, 'init: the dataset') : undefined;
  const answers = ['mode', 'format', 'data'];
  const file = saveProfile(ctx, name, (profile) => answeredProfile(profile, { mode: 'local', ...(data ? { data } : {}) }, format), { answers });
  const flag = profileFlag(ctx, name);
  const left = stillWrong(ctx, name, answers);
  ctx.log.info(
    left
      ? `saved profile "${name}" in ${file}; ${left}`
      : data
        ? `saved profile "${name}" in ${file}; try: convx report${flag}`
        : `saved profile "${name}" in ${file}, without a dataset: pass --data DIR, or save one with: convx config set data DIR${flag}`,
  );
}

/** A prompt's answer to a check: true, or what is wrong (and its hint) for the prompt to show and ask again. */
async function promptCheck(check: () => unknown): Promise<true | string> {
  try {
    await check();
    return true;
  } catch (error) {
    if (error instanceof ConvxError) return `${error.message}${error.hint ? ` (${error.hint})` : ''}`;
    throw error;
  }
}

/** A URL's answer checked as `convx config set KEY` checks it (a URL with credentials in the prompt's own words). */
function urlCheck(ctx: Context, key: 'api' | 'deliveryApi', value: string, source: string): Promise<true | string> | string {
  if (hasCredentials(value)) return NO_CREDENTIALS;
  return promptCheck(() => checkedSetting(ctx, key, value.trim(), source));
}

/** The token prompt's check: a token an HTTP header can carry (its text never shown), or empty. */
function tokenCheck(value: string): true | string {
  const problem = tokenProblem(value.trim());
  return problem === undefined ? true : `the token holds ${problem}, which an HTTP header cannot carry; type it again`;
}

/**
 * API mode: the URLs and the token. With verify (no --no-verify), the URL is asked again until it
 * answers the interface (api/interface-check.ts), and a token the API refuses is an error: nothing
 * saved. An empty token keeps the stored one (checked too), else the profile has none.
 */
async function initApi(ctx: Context, stored: Profile, format: string, verify: boolean, { input, password }: Prompts, io: PromptIo): Promise<void> {
  const name = ctx.settings.profile;
  const check = verify ? await import('../api/interface-check.js') : undefined;
  const typedApi = await input(
    {
      message: 'Reporting base URL (for example https://reports.example.com/v1)',
      ...(stored.api ? { default: stored.api } : {}),
      validate: async (value) => {
        const wrong = await urlCheck(ctx, 'api', value, 'the reporting URL');
        if (wrong !== true || !check) return wrong;
        return promptCheck(() => check.checkBase(checkedSetting(ctx, 'api', value.trim())));
      },
    },
    io,
  );
  const typedDelivery = await input(
    {
      message: stored.deliveryApi ? 'Delivery base URL (v4)' : 'Delivery base URL (v4; empty to skip)',
      ...(stored.deliveryApi ? { default: stored.deliveryApi } : {}),
      validate: (value) => (value.trim() ? urlCheck(ctx, 'deliveryApi', value, 'the delivery URL') : true),
    },
    io,
  );
  // The prompts refuse what is wrong; checked again (and stored as config set stores them) before anything is written.
  const api = checkedSetting(ctx, 'api', typedApi.trim(), 'init: the reporting URL');
  const deliveryApi = typedDelivery.trim() ? checkedSetting(ctx, 'deliveryApi', typedDelivery.trim(), 'init: the delivery URL') : undefined;
  const typedToken = (
    await password(
      {
        message: stored.token ? 'API token (empty: keep the stored one)' : 'API token (stored in the 0600 credentials file; empty to skip)',
        mask: '*',
        validate: tokenCheck,
      },
      io,
    )
  ).trim();
  const token = typedToken || stored.token;
  if (token) await check?.checkToken(api, token);
  const answers = ['mode', 'format', 'api', 'deliveryApi', ...(typedToken ? ['token'] : [])];
  const file = saveProfile(
    ctx,
    name,
    (profile) => answeredProfile(profile, { mode: 'api', api, ...(deliveryApi ? { deliveryApi } : {}), ...(typedToken ? { token: typedToken } : {}) }, format),
    { answers },
  );
  const flag = profileFlag(ctx, name);
  const kept = !typedToken && token ? ' (the stored token kept)' : '';
  const left = stillWrong(ctx, name, answers);
  ctx.log.info(
    left
      ? `saved profile "${name}" in ${file}${kept}; ${left}`
      : !check
        ? `saved profile "${name}" in ${file}${kept}; check it with: convx auth status${flag}`
        : token
          ? `saved profile "${name}" in ${file}${kept}; the API accepts the token; try: convx report${flag}`
          : `saved profile "${name}" in ${file}, without a token: store one with: convx auth login${flag}`,
  );
}
