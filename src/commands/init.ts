import { existsSync } from 'node:fs';
import { checkApiUrl, hasCredentials } from '../config.js';
import { UsageError } from '../errors.js';
import { FORMATS } from '../output/format.js';
import { saveProfile } from './auth.js';
import { defineHandler } from './registry.js';

const NO_CREDENTIALS = 'no user name or password in the URL, please: the token (next) authenticates';

export default defineHandler<Record<string, never>>({
  async run(ctx) {
    if (!ctx.io.stdinIsTTY) {
      throw new UsageError(
        'convx init asks questions and needs a terminal. Without one, use flags or the environment: ' +
          '`convx auth login --api URL --with-token < token.txt`, or CONVX_DATA, CONVX_API_URL and CONVX_TOKEN',
      );
    }
    const { input, password, select } = await import('@inquirer/prompts');
    const io = { input: ctx.io.stdin, output: ctx.io.stderr };
    const mode = await select(
      {
        message: 'Where does the data come from?',
        choices: [
          { name: 'exported files on this machine (local mode)', value: 'local' as const },
          { name: 'a running service (API mode)', value: 'api' as const },
        ],
      },
      io,
    );
    const format = await select(
      {
        message: 'Default output format',
        choices: [{ name: 'table on a terminal, tsv otherwise', value: '' }, ...FORMATS.map((f) => ({ name: f, value: f }))],
      },
      io,
    );
    const name = ctx.settings.profile;
    if (mode === 'local') {
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
      const file = saveProfile(ctx, name, () => ({ mode, ...(data ? { data: ctx.resolvePath(data) } : {}), ...(format ? { format } : {}) }));
      ctx.log.info(
        data
          ? `saved profile "${name}" in ${file}; try: convx report`
          : `saved profile "${name}" in ${file}, without a dataset: pass --data DIR, or save one with: convx config set data DIR${name === 'default' ? '' : ` --profile ${name}`}`,
      );
      return;
    }
    const api = await input(
      {
        message: 'Reporting base URL (for example https://reports.example.com/v1)',
        validate: (value) => (hasCredentials(value) ? NO_CREDENTIALS : /^https?:\/\/\S+$/.test(value) ? true : 'an http(s) URL, please'),
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
    const token = await password({ message: 'API token (stored in the 0600 credentials file; empty to skip)', mask: '*' }, io);
    const file = saveProfile(ctx, name, () => ({
      mode,
      api,
      ...(deliveryApi ? { deliveryApi } : {}),
      ...(token ? { token: token.trim() } : {}),
      ...(format ? { format } : {}),
    }));
    ctx.log.info(`saved profile "${name}" in ${file}; check it with: convx auth status`);
  },
});
