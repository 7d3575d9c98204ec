import { UsageError } from '../errors.js';
import { defineCommand } from './registry.js';

interface TokenFlags {
  expires: string;
  issuer?: string;
  audience?: string;
}

export default defineCommand<TokenFlags>({
  name: 'token',
  summary: 'print a signed development token for `convx serve` (HS256 with CONVX_JWT_SECRET)',
  options: [
    { flags: '--expires <duration>', description: 'lifetime: 90s, 15m, 1h, 7d, 2w', defaultValue: '1h' },
    { flags: '--issuer <iss>', description: 'the "iss" claim, for a server started with --jwt-issuer' },
    { flags: '--audience <aud>', description: 'the "aud" claim, for a server started with --jwt-audience' },
  ],
  examples: [
    'CONVX_JWT_SECRET=dev-secret convx token --plugin shop',
    'convx token --plugin shop --expires 7d > token.txt',
    'convx token --plugin shop --issuer https://id.example.com --audience convx',
  ],
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
