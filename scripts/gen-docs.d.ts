/** Types of scripts/gen-docs.js, for test/docs.test.ts. */
import type { Command } from 'commander';

export function renderCommandDocs(
  createProgram: (io: never, state: { exitCode: number }) => Command,
  commands: readonly { name: string; examples?: readonly string[] }[],
): Map<string, string>;

export function writeCommandDocs(dir: string, files: Map<string, string>): void;
