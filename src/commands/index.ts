import { authLogin, authLogout, authStatus } from './auth.js';
import { completionCommand } from './completion.js';
import { dataCheck, dataGenerate } from './data.js';
import drill from './drill.js';
import init from './init.js';
import items from './items.js';
import order from './order.js';
import report from './report.js';
import serve from './serve.js';
import token from './token.js';
import validate from './validate.js';
import type { CommandDefinition } from './registry.js';

/** Every command, in the order `convx --help` lists them. */
export const COMMANDS: CommandDefinition<never>[] = [
  report,
  items,
  order,
  drill,
  validate,
  serve,
  token,
  init,
  authLogin,
  authStatus,
  authLogout,
  dataCheck,
  dataGenerate,
] as CommandDefinition<never>[];
COMMANDS.push(completionCommand(() => COMMANDS) as CommandDefinition<never>);

export const GROUPS: Record<string, string> = {
  data: 'dataset tools: check, generate',
  auth: 'API credentials: login, status, logout',
};
