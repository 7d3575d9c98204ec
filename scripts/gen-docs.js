#!/usr/bin/env node
/**
 * Writes the command reference, docs/commands/<command>.md and docs/commands/README.md,
 * from the metadata `--help` prints: the commander program of createProgram() (usage,
 * description, each flag's help and default, the global flags a command honours) and the
 * registry's examples (COMMANDS of src/commands/index.ts). Nothing here depends on the
 * terminal: the pages are tables and code blocks, never wrapped text. Hidden commands
 * (and internal ones, named `__…`) are left out.
 *
 *   npm run docs                 builds, then writes docs/commands/
 *   node scripts/gen-docs.js DIR writes into DIR instead (after `npm run build`)
 *
 * test/docs.test.ts renders the same pages from src/ and fails when docs/commands/ is stale.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Where the prose about each command lives (relative to docs/commands/). */
const MORE = {
  report: ['../guides/analyst.md#convx-report-conversions-per-source', 'the analyst guide'],
  items: ['../guides/analyst.md#convx-items-individual-conversion-records', 'the analyst guide'],
  drill: ['../guides/analyst.md#convx-drill-the-records-behind-a-row', 'the analyst guide'],
  order: ['../guides/support.md#convx-order-which-source-produced-an-order', 'the support guide'],
  contact: ['../guides/support.md#convx-contact-a-contacts-orders-conversions-and-clicks', 'the support guide'],
  validate: ['../validation.md', 'Delivery validation'],
  serve: ['../server.md', 'Operating `convx serve`'],
  token: ['../server.md#authentication', 'Operating `convx serve`: Authentication'],
  init: ['../configuration.md#profiles', 'Configuration: profiles'],
  auth: ['../configuration.md#profiles', 'Configuration: profiles'],
  config: ['../configuration.md#profiles', 'Configuration: profiles'],
  completion: ['../configuration.md#shell-completion', 'Configuration: shell completion'],
  'data check': ['../datasets.md#convx-data-check', 'Datasets: `data check`'],
  'data import': ['../datasets.md#convx-data-import', 'Datasets: `data import`'],
  'data generate': ['../datasets.md#convx-data-generate', 'Datasets: `data generate`'],
};

/** Text for a Markdown table cell or paragraph: no HTML, no emphasis, no cell break. */
function text(value) {
  return value
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 ? part : part.replace(/[<>]|\\|\*(?=\S)/g, (c) => `\\${c}`)))
    .join('')
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');
}

/** A term in a table cell: code, with its pipes escaped (GFM splits cells on them even in code). */
function code(value) {
  return `\`${value.replace(/\|/g, '\\|')}\``;
}

/** The command's name after "convx", e.g. "data check". */
function fullName(cmd) {
  const words = [];
  for (let c = cmd; c.parent; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

function fileName(cmd) {
  return `${fullName(cmd).replace(/ /g, '-')}.md`;
}

/** The subcommands a reader may type: not hidden, not internal. */
function visible(cmd) {
  return cmd.commands.filter((c) => !c._hidden && !c.name().startsWith('__'));
}

function optionTable(helper, options) {
  const rows = options.map((o) => `| ${code(helper.optionTerm(o))} | ${text(helper.optionDescription(o))} |`);
  return ['| flag | what |', '|---|---|', ...rows].join('\n');
}

function commandTable(helper, commands) {
  const rows = commands.map((c) => `| [${code(`convx ${fullName(c)}`)}](${fileName(c)}) | ${text(helper.subcommandDescription(c))} |`);
  return ['| command | what |', '|---|---|', ...rows].join('\n');
}

/** One command's page: usage, description, its flags, the global flags it honours, examples. */
function commandPage(cmd, examples) {
  const helper = cmd.createHelp();
  const name = fullName(cmd);
  const parts = [`# convx ${name}`, text(helper.commandDescription(cmd)), '```\n' + helper.commandUsage(cmd) + '\n```'];
  const subcommands = visible(cmd);
  if (subcommands.length) parts.push('## Commands', commandTable(helper, subcommands));
  parts.push('## Options', optionTable(helper, helper.visibleOptions(cmd)));
  const globals = helper.visibleGlobalOptions(cmd);
  if (globals.length) {
    parts.push('## Global options', 'The global flags this command honours; any other global flag typed on its command line is a usage error.', optionTable(helper, globals));
  }
  if (examples?.length) parts.push('## Examples', '```sh\n' + examples.join('\n') + '\n```');
  const more = MORE[name];
  const parent = cmd.parent.parent ? `[convx ${fullName(cmd.parent)}](${fileName(cmd.parent)})` : '[all commands](README.md)';
  parts.push(`See also: ${more ? `[${more[1]}](${more[0]}), ` : ''}${parent}. This page is generated from the command registry by \`npm run docs\`; \`convx ${name} --help\` prints the same.`);
  return `${parts.join('\n\n')}\n`;
}

/** The index: every command, the global flags, and what `convx --help` adds after its lists. */
function indexPage(program, after, pages) {
  const helper = program.createHelp();
  const rows = pages.map((cmd) => `| [${code(`convx ${fullName(cmd)}`)}](${fileName(cmd)}) | ${text(helper.subcommandDescription(cmd))} |`);
  return `${[
    '# Command reference',
    `Generated from the command registry by \`npm run docs\` (\`scripts/gen-docs.js\`); do not edit these pages by hand. \`convx --help\` and \`convx COMMAND --help\` print the same. The guides and the other pages are listed in the [README](../../README.md#documentation).`,
    text(helper.commandDescription(program)),
    '```\n' + helper.commandUsage(program) + '\n```',
    '## Commands',
    ['| command | what |', '|---|---|', ...rows].join('\n'),
    '## Global options',
    'Every global flag; each command honours some of them (its page lists which), and another one typed on its command line is a usage error.',
    optionTable(helper, helper.visibleOptions(program)),
    '## From `convx --help`',
    '```\n' + after.trim() + '\n```',
  ].join('\n\n')}\n`;
}

/** A stand-in for the terminal: writes are collected, nothing is a TTY, no colour. */
function quietIo() {
  const out = [];
  const sink = { write: (chunk) => (out.push(String(chunk)), true) };
  const io = { stdout: sink, stderr: sink, stdin: process.stdin, stdoutIsTTY: false, stderrIsTTY: false, stdinIsTTY: false };
  return { out, io: { ...io, env: {}, cwd: process.cwd(), now: () => new Date(0), onSignal: () => () => {} } };
}

/**
 * Every page of the reference, file name -> Markdown, from `createProgram` (src/cli.ts or
 * dist/cli.js) and `commands` (COMMANDS of the registry, for the examples).
 */
export function renderCommandDocs(createProgram, commands) {
  const { out, io } = quietIo();
  const program = createProgram(io, { exitCode: 0 });
  for (const cmd of [program, ...program.commands, ...program.commands.flatMap((c) => c.commands)]) {
    cmd.configureOutput({ getOutHelpWidth: () => 80, getErrHelpWidth: () => 80, getOutHasColors: () => false, getErrHasColors: () => false });
  }
  // `convx --help` = helpInformation() and then the text added after it (modes, exit codes, examples).
  program.outputHelp();
  const after = out.join('').slice(program.helpInformation().length);
  const examples = new Map(commands.map((c) => [c.name, c.examples]));
  // a group's (`convx data --help`): each of its commands' first example that runs it, as src/cli.ts adds them
  const own = (c) => c.examples?.find((e) => e.startsWith(`convx ${c.name} `) || e === `convx ${c.name}`);
  for (const group of new Set(commands.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]))) {
    examples.set(group, commands.filter((c) => c.name.startsWith(`${group} `)).flatMap((c) => own(c) ?? []));
  }
  const pages = [];
  const walk = (cmd) => {
    for (const sub of visible(cmd)) {
      pages.push(sub);
      walk(sub);
    }
  };
  walk(program);
  const files = new Map(pages.map((cmd) => [fileName(cmd), commandPage(cmd, examples.get(fullName(cmd)))]));
  files.set('README.md', indexPage(program, after, pages));
  return files;
}

/** Writes the pages into `dir`, removing pages of commands that no longer exist. */
export function writeCommandDocs(dir, files) {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) if (name.endsWith('.md') && !files.has(name)) rmSync(join(dir, name));
  for (const [name, content] of files) writeFileSync(join(dir, name), content);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const [{ createProgram }, { COMMANDS }] = await Promise.all([import('../dist/cli.js'), import('../dist/commands/index.js')]);
  const dir = resolve(process.argv[2] ?? join(root, 'docs', 'commands'));
  const files = renderCommandDocs(createProgram, COMMANDS);
  writeCommandDocs(dir, files);
  process.stdout.write(`wrote ${files.size} pages into ${dir}\n`);
}
