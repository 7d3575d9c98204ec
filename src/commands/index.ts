import { dataCheck, dataGenerate } from './data.js';
import drill from './drill.js';
import items from './items.js';
import order from './order.js';
import report from './report.js';
import serve from './serve.js';
import token from './token.js';
import type { CommandDefinition } from './registry.js';

/** Every command, in the order `convx --help` lists them. */
export const COMMANDS = [report, items, order, drill, serve, token, dataCheck, dataGenerate] as CommandDefinition<never>[];

export const GROUPS: Record<string, string> = {
  data: 'dataset tools: check, generate',
};
