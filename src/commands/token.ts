import { UsageError } from '../errors.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';

export default defineHandler<CommandFlags<'token'>>({
  async run(ctx, _args, flags) {
    const secret = ctx.io.env.CONVX_JWT_SECRET;
    if (!secret) throw new UsageError('set CONVX_JWT_SECRET to the secret `convx serve` verifies tokens with');
    const plugin = ctx.globals.plugin;
    if (!plugin) throw new UsageError('--plugin <id> is required: the tenant the token grants');
    const { signDevelopmentToken } = await import('../server/auth.js');
    const claims = {
      ...(flags.issuer !== undefined ? { issuer: flags.issuer } : {}),
      ...(flags.audience !== undefined ? { audience: flags.audience } : {}),
    };
    await ctx.output.text(`${await signDevelopmentToken(secret, plugin, flags.expires, ctx.io.now(), claims)}\n`);
  },
});
