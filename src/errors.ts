/** The exit codes, the one list every command uses (docs/exit-codes.md). */
export const ExitCode = {
  ok: 0,
  findings: 1,
  unexpected: 1,
  usage: 2,
  /** An output that cannot be written (stdout, --output's file): 2, as a file that cannot be read. */
  output: 2,
  notFound: 3,
  auth: 4,
  network: 5,
  interrupted: 130,
} as const;

export interface ParameterProblem {
  parameter: string;
  message: string;
}

export class ConvxError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly hint?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad flags, arguments or query parameters (exit 2; HTTP 400 on the server). */
export class UsageError extends ConvxError {
  constructor(
    message: string,
    readonly problems: ParameterProblem[] = [],
    hint?: string,
  ) {
    super(message, ExitCode.usage, hint);
  }
}

/**
 * The API's answer to a contact's key that is the e-mail address or client contact id of several
 * contacts (409 ambiguous-key), and local mode's of such a key: a usage error; `convx contact` says the API's as local mode does.
 */
export class AmbiguousKeyError extends UsageError {
  constructor(
    message: string,
    /** What the key is of those contacts. */
    readonly matchedBy: 'email' | 'clientContactId',
    hint?: string,
  ) {
    super(message, [], hint);
  }
}

/**
 * An output that cannot be written: stdout (a full disk, /dev/full), or the file --output or
 * --update-baseline names (exit 2, docs/exit-codes.md).
 */
export class OutputError extends ConvxError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.output, hint);
  }
}

/**
 * Stdout's reader went away (EPIPE: `convx … | head`). Not an error in itself: the one error
 * handler ends a reporting command with 0 and says nothing (docs/exit-codes.md); `convx validate`
 * catches it around its output and still ends with its verdict (and says why on stderr).
 */
export class PipeClosedError extends ConvxError {
  constructor() {
    super('cannot write the output: its reader closed it', ExitCode.ok);
  }
}

const WRITE_FAILURES: Record<string, string> = {
  ENOENT: 'its folder does not exist',
  ENOTDIR: 'a part of its path is not a folder',
  EISDIR: 'it is a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file is too large',
  EIO: 'an input/output error of the device',
  EBADF: 'it is not open for writing',
  ENXIO: 'no device or reader behind it',
  EPIPE: 'its reader closed it',
};

const READ_FAILURES: Record<string, string> = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'a part of its path is not a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EIO: 'an input/output error of the device',
  ELOOP: 'a loop of symbolic links',
  EMFILE: 'too many files are open',
  ENFILE: 'too many files are open',
};

/** A system error in words, by its code in `words` (the code itself where it has none, else its message). */
const inWords =
  (words: Record<string, string>) =>
  (error: unknown): string => {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    return words[code ?? ''] ?? code ?? (error instanceof Error ? error.message : String(error));
  };

/** Why a file or stream could not be written, in words, by the system's error code. */
export const writeFailure = inWords(WRITE_FAILURES);
/** Why a file or folder could not be read, in words, by the system's error code. */
export const readFailure = inWords(READ_FAILURES);

/** The dataset is missing, unreadable or holds values it should not (exit 2). */
export class DataError extends ConvxError {
  constructor(
    /** The first line of the message; details follow it, one per line. */
    readonly summary: string,
    readonly details: string[] = [],
  ) {
    super(details.length ? `${summary}\n  ${details.join('\n  ')}` : summary, ExitCode.usage);
  }
}

/**
 * A conversion report asked of a dataset without orders and touches (one that
 * serves delivery validation only): exit 2 like any data error; HTTP 404 on the server.
 */
export class NoOrdersError extends DataError {}

/**
 * A request or input over one of the documented limits (for example the
 * audience list size of a validation request): exit 2, HTTP 413 on the server.
 */
export class TooLargeError extends ConvxError {
  constructor(
    message: string,
    /** The limit's name as docs/server.md and SECURITY.md list it, e.g. "maxAudienceIds". */
    readonly limit: string,
  ) {
    super(message, ExitCode.usage);
  }
}

/**
 * An id or key the data does not hold: an order, a contact, a source id, a config
 * setting that is not set (exit 3, docs/exit-codes.md). Nothing goes to stdout.
 */
export class NotFoundError extends ConvxError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.notFound, hint);
  }
}

/** A finding the user should hear about that is not a crash, e.g. "order o-1 is not a conversion" (exit 1). */
export class FindingError extends ConvxError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.findings, hint);
  }
}

/**
 * Ctrl-C where convx itself read the key (an interactive prompt of `init` or `auth login`, whose
 * terminal is in raw mode, so no SIGINT reaches the process): exit 130, "interrupted", as the
 * signal would end it (docs/exit-codes.md).
 */
export class InterruptedError extends ConvxError {
  constructor() {
    super('interrupted', ExitCode.interrupted);
  }
}

/** The API refused the credentials (exit 4). */
export class AuthError extends ConvxError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.auth, hint);
  }
}

/** The API is unreachable, failing, or answers with something that is not the interface (exit 5). */
export class ApiError extends ConvxError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.network, hint);
  }
}
