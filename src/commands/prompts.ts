/**
 * The interactive prompts of `convx init` and `convx auth login` (@inquirer/prompts, loaded when
 * a prompt is asked). Ctrl-C at a prompt (the terminal in raw mode: the key reaches the prompt,
 * not a SIGINT the process) ends the command as Ctrl-C ends any other: InterruptedError, exit 130.
 */
import { InterruptedError } from '../errors.js';

type Inquirer = typeof import('@inquirer/prompts');
export type Prompts = Pick<Inquirer, 'input' | 'password' | 'select'>;

/** The prompt library's error for Ctrl-C (ExitPromptError, "User force closed the prompt with SIGINT"), by its name. */
export function isPromptExit(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExitPromptError';
}

/** A prompt's answer, Ctrl-C at it an InterruptedError. */
export async function answered<T>(question: Promise<T>): Promise<T> {
  try {
    return await question;
  } catch (error) {
    throw isPromptExit(error) ? new InterruptedError() : error;
  }
}

/** The prompts, each answering through `answered`. */
export async function loadPrompts(): Promise<Prompts> {
  const inquirer = await import('@inquirer/prompts');
  return {
    input: ((config, context) => answered(inquirer.input(config, context))) as Inquirer['input'],
    password: ((config, context) => answered(inquirer.password(config, context))) as Inquirer['password'],
    select: ((config, context) => answered(inquirer.select(config, context))) as Inquirer['select'],
  };
}
