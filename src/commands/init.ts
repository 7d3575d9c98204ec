import { existsSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { FORMATS } from '../output/format.js';
import { saveProfile } from './auth.js';
import { defineHandler } from './registry.js';

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
      const data = await input(
        {
          message: 'Dataset directory',
          validate: (value) => (existsSync(ctx.resolvePath(value)) ? true : `${value} does not exist`),
        },
        io,
      );
      const file = saveProfile(ctx, name, () => ({ mode, data: ctx.resolvePath(data), ...(format ? { format } : {}) }));
      ctx.log.info(`saved profile "${name}" in ${file}; try: convx report`);
      return;
    }
    const api = await input(
      {
        message: 'Reporting base URL (for example https://reports.example.com/v1)',
        validate: (value) => (/^https?:\/\/\S+$/.test(value) ? true : 'an http(s) URL, please'),
      },
      io,
    );
    const deliveryApi = await input({ message: 'Delivery base URL (v4; empty to skip)' }, io);
    const token = await password({ message: 'API token', mask: '*' }, io);
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
