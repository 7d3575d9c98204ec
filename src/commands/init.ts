import { existsSync } from 'node:fs';
import { checkApiUrl, DEFAULT_PROFILE, hasCredentials, profileName } from '../config.js';
import type { Context } from '../context.js';
import { ConvxError, UsageError } from '../errors.js';
import { FORMATS } from '../output/formats.js';
import { saveProfile } from './auth.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';

const NO_CREDENTIALS = 'no user name or password in the URL, please: the token (next) authenticates';

type Prompts = typeof import('@inquirer/prompts');
/** The prompts' streams: the terminal's stdin, and stderr (stdout stays for data). */
type PromptIo = { input: NodeJS.ReadableStream; output: NodeJS.WritableStream };

export default defineHandler<CommandFlags<'init'>>({
  async run(ctx, _args, flags) {
    if (!ctx.io.stdinIsTTY) {
      throw new UsageError(
        'convx init asks questions and needs a terminal. Without one, use flags or the environment: ' +
          '`convx auth login --api URL --with-token < token.txt`, or CONVX_DATA, CONVX_API_URL and CONVX_TOKEN',
      );
    }
    const prompts = await import('@inquirer/prompts');
    const io = { input: ctx.io.stdin, output: ctx.io.stderr };
    const mode = await prompts.select(
      {
        message: 'Where does the data come from?',
        choices: [
          { name: 'exported files on this machine (local mode)', value: 'local' as const },
          { name: 'a running service (API mode)', value: 'api' as const },
        ],
      },
      io,
    );
    const format = await prompts.select(
      {
        message: 'Default output format',
        choices: [{ name: 'table on a terminal, tsv otherwise', value: '' }, ...FORMATS.map((f) => ({ name: f, value: f }))],
      },
      io,
    );
    if (mode === 'local') await initLocal(ctx, format, prompts, io);
    else await initApi(ctx, format, flags.verify, prompts, io);
  },
});

/**
 * ` --profile NAME` for the command a saved profile is used with, unless a command without it uses
 * that profile anyway: "default", when it is the one used (no CONVX_PROFILE or defaultProfile naming another).
 */
function profileFlag(ctx: Context, name: string): string {
  const bare = profileName(undefined, ctx.io.env, { ...ctx.config, defaultProfile: ctx.config.defaultProfile ?? name });
  return name === DEFAULT_PROFILE && bare === name ? '' : ` --profile ${name}`;
}

async function initLocal(ctx: Context, format: string, { input }: Prompts, io: PromptIo): Promise<void> {
  const name = ctx.settings.profile;
  // No default: an empty answer saves no dataset (never the directory convx happens to run in).
  const data = (
    await input(
      {
        message: 'Dataset directory or .duckdb file (empty: none, pass --data each time)',
        validate: (value) => (!value.trim() || existsSync(ctx.resolvePath(value.trim())) ? true : `${value.trim()} does not exist`),
      },
      io,
    )
  ).trim();
  const file = saveProfile(ctx, name, () => ({ mode: 'local', ...(data ? { data: ctx.resolvePath(data) } : {}), ...(format ? { format } : {}) }));
  const flag = profileFlag(ctx, name);
  ctx.log.info(
    data
      ? `saved profile "${name}" in ${file}; try: convx report${flag}`
      : `saved profile "${name}" in ${file}, without a dataset: pass --data DIR, or save one with: convx config set data DIR${flag}`,
  );
}

/** A prompt's answer to a check: true, or what is wrong (and its hint) for the prompt to show and ask again. */
async function promptCheck(check: () => Promise<void>): Promise<true | string> {
  try {
    await check();
    return true;
  } catch (error) {
    if (error instanceof ConvxError) return `${error.message}${error.hint ? ` (${error.hint})` : ''}`;
    throw error;
  }
}

/**
 * API mode: the URLs and the token. With verify (no --no-verify), the URL is asked again until it
 * answers the interface (api/interface-check.ts), and a token the API refuses is an error: nothing saved.
 */
async function initApi(ctx: Context, format: string, verify: boolean, { input, password }: Prompts, io: PromptIo): Promise<void> {
  const name = ctx.settings.profile;
  const check = verify ? await import('../api/interface-check.js') : undefined;
  const api = await input(
    {
      message: 'Reporting base URL (for example https://reports.example.com/v1)',
      validate: async (value) => {
        if (hasCredentials(value)) return NO_CREDENTIALS;
        if (!/^https?:\/\/\S+$/.test(value)) return 'an http(s) URL, please';
        return check ? promptCheck(() => check.checkBase(value)) : true;
      },
    },
    io,
  );
  const deliveryApi = await input(
    { message: 'Delivery base URL (v4; empty to skip)', validate: (value) => (hasCredentials(value) ? NO_CREDENTIALS : true) },
    io,
  );
  // The prompts refuse them; checked again before anything is written.
  checkApiUrl(api, 'init: the API URL');
  checkApiUrl(deliveryApi || undefined, 'init: the delivery API URL');
  const token = (await password({ message: 'API token (stored in the 0600 credentials file; empty to skip)', mask: '*' }, io)).trim();
  if (token) await check?.checkToken(api, token);
  const file = saveProfile(ctx, name, () => ({
    mode: 'api',
    api,
    ...(deliveryApi ? { deliveryApi } : {}),
    ...(token ? { token } : {}),
    ...(format ? { format } : {}),
  }));
  const flag = profileFlag(ctx, name);
  ctx.log.info(
    !check
      ? `saved profile "${name}" in ${file}; check it with: convx auth status${flag}`
      : token
        ? `saved profile "${name}" in ${file}; the API accepts the token; try: convx report${flag}`
        : `saved profile "${name}" in ${file}, without a token: store one with: convx auth login${flag}`,
  );
}
