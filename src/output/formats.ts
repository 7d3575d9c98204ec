/**
 * The names of the output formats, apart from the formatters (format.ts): `convx --help` and the
 * global flags need the names only, not the formatters and the response shapes behind them.
 */
/** The formats of the reporting commands. */
export const FORMATS = ['table', 'json', 'jsonl', 'csv', 'tsv'] as const;
export type Format = (typeof FORMATS)[number];

/**
 * The formats of a command that also prints a report as one page to share (report; trend once it
 * renders trendHtml): the reporting formats and html (output/html.ts), which only the commands that
 * list it take (commands/globals.ts, PAGE_COMMANDS).
 */
export const PAGE_FORMATS = [...FORMATS, 'html'] as const;
export type PageFormat = (typeof PAGE_FORMATS)[number];

/**
 * The output formats of `convx validate`. Without -o: a summary on a terminal, the JSON body when piped.
 * html: a preview page (validation-html.ts); sarif: SARIF 2.1.0 for code scanning (sarif.ts).
 */
export const VALIDATE_FORMATS = ['table', 'json', 'github', 'junit', 'html', 'sarif'] as const;
export type ValidateFormat = (typeof VALIDATE_FORMATS)[number];

/**
 * -o markdown: a GitHub-flavoured markdown table or card to paste into a ticket or a chat
 * (markdown.ts); only the commands that list it take it (commands/globals.ts, MARKDOWN_COMMANDS).
 */
export const MARKDOWN = 'markdown';

/** The formats the one writer prints (writer.ts): the reporting formats and markdown. */
export type WriterFormat = Format | typeof MARKDOWN;

/** Any format a command prints (a command's own list says which it takes). */
export type AnyFormat = PageFormat | ValidateFormat | typeof MARKDOWN;

/** Every format name of any command, once each. */
export const ANY_FORMATS: readonly AnyFormat[] = [...new Set<AnyFormat>([...PAGE_FORMATS, ...VALIDATE_FORMATS, MARKDOWN])];

export const isFormat = (value: string): value is Format => (FORMATS as readonly string[]).includes(value);
export const isValidateFormat = (value: string): value is ValidateFormat => (VALIDATE_FORMATS as readonly string[]).includes(value);
