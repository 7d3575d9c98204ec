/**
 * The template work of a delivery validation, on the sandbox (sandbox.ts):
 * each part of an asset parsed (template_syntax, template_file_access), the
 * samples rendered (render_failed), and the limits any of it runs into
 * (render_limit_exceeded, each said once). No database: the recipients to
 * render for are given (src/local/validate.ts picks them).
 */
import { createHash } from 'node:crypto';
import { HTML_EXCERPT_CHARS, SAMPLE_SUBJECT_CHARS, type Finding, type ValidateResponse } from '../model/validation.js';
import { FIELDS, where, type Field, type ResolvedAsset } from './delivery.js';
import { cut, excerpt } from './html.js';
import { limitFlag, limitValue } from './limits.js';
import type { LimitOutcome, TemplateSandbox } from './sandbox.js';
import { templateMessage } from './templates.js';

/** The sandbox of one validation, the errors its template work finds, and the limit findings said so far (each once). */
export class TemplateWork {
  private readonly said = new Set<string>();

  constructor(
    readonly sandbox: TemplateSandbox,
    readonly errors: Finding[],
  ) {}

  /** A render_limit_exceeded error naming the part and the limit; the validation's own limits are said once. */
  limitExceeded({ limit }: LimitOutcome, asset: ResolvedAsset, field: Field, contactId?: string): void {
    const key = limit === 'requestTimeMs' || limit === 'validationOutputBytes' ? limit : `${limit} ${asset.ref} ${field}`;
    if (this.said.has(key)) return;
    this.said.add(key);
    const { limits } = this.sandbox;
    const bound = `${limitValue(limits, limit)}, ${limitFlag(limit)}`;
    const part = `${field} of ${asset.ref}`;
    const who = contactId === undefined ? '' : ` for contact ${contactId}`;
    const message = {
      renderTimeMs: `${part} takes longer than the render time limit (${bound})${who}; the asset is not rendered further`,
      requestTimeMs: `template checks and renders stopped at ${part}: the validation's renders used up its time limit (${bound}); what comes after was not checked or rendered`,
      templateChars: `${part} is longer than the template size limit (${bound}); the asset is not rendered`,
      renderMemory: `${part} allocates more than the render memory limit (${bound})${who}; the asset is not rendered further`,
      outputBytes: `${part} renders to more than the output size limit (${bound})${who}; the asset is not rendered further`,
      validationOutputBytes: `samples stopped at ${part}${who}: the parts rendered in this validation together are larger than the validation output limit (${bound}); no more samples are rendered`,
      heapMb: `${part} needs more memory than the renderer's heap limit (${bound})${who}; the asset is not rendered further`,
    }[limit];
    this.errors.push({
      code: 'render_limit_exceeded',
      message,
      ...where(asset),
      field,
      ...(contactId === undefined ? {} : { contactId }),
    });
  }
}

/** Parses each part in the sandbox; the parts that parse. Syntax, file access and limits are errors. */
export async function checkTemplates(asset: ResolvedAsset, work: TemplateWork): Promise<Set<Field>> {
  const parsed = new Set<Field>();
  for (const field of FIELDS) {
    const template = asset.content[field];
    if (template === undefined) continue;
    const outcome = await work.sandbox.check(template);
    const line = 'line' in outcome && outcome.line ? { line: outcome.line } : {};
    const at = `${field}${line.line ? ` line ${line.line}` : ''}`;
    if (outcome.kind === 'ok') parsed.add(field);
    else if (outcome.kind === 'limit') work.limitExceeded(outcome, asset, field);
    else if (outcome.kind === 'fileAccess') {
      work.errors.push({
        code: 'template_file_access',
        message: `${at}: {% ${outcome.tag} %} would read a template file; templates here have no files, so write the content inline`,
        ...where(asset),
        field,
        ...line,
      });
    } else {
      work.errors.push({ code: 'template_syntax', message: `${at}: ${templateMessage(outcome.message)}`, ...where(asset), field, ...line });
    }
  }
  return parsed;
}

/** A recipient to render a sample for: the template sees `contact` (camelCase keys) beside the request's variables. */
export interface SampleRecipient {
  language: string;
  contactId: string;
  contact: Record<string, unknown>;
}

/**
 * The subject and HTML of an asset rendered for each recipient, in order: a
 * render that fails is render_failed (that recipient has no sample); a limit
 * stops the asset's samples (the same template would hit it again). `preview`
 * keeps each sample's whole HTML; `text` renders the text part too (the
 * tracking lint, for its URLs a template fills in), kept as `text`.
 */
/** A sample's digest: the first 16 hex digits of the SHA-256 of its whole rendered subject, HTML and text. */
export function digestOf(subject: string, html: string, text: string | undefined): string {
  return createHash('sha256').update(JSON.stringify([subject, html, text ?? null])).digest('hex').slice(0, 16);
}

export async function renderSamples(
  asset: ResolvedAsset,
  recipients: readonly SampleRecipient[],
  requestVariables: Record<string, unknown>,
  work: TemplateWork,
  preview = false,
  text = false,
): Promise<(ValidateResponse['render']['samples'][number] & { text?: string })[]> {
  const samples: (ValidateResponse['render']['samples'][number] & { text?: string })[] = [];
  // the text part too, when there is one: its excerpt and the digest show a change of it (and the tracking lint reads its URLs)
  const fields: Field[] = asset.content.text ? ['subject', 'html', 'text'] : ['subject', 'html'];
  for (const { language, contactId, contact } of recipients) {
    const variables = { ...requestVariables, contact };
    const rendered: Partial<Record<Field, string>> = {};
    for (const field of fields) {
      const template = asset.content[field] ?? '';
      const outcome = template === '' ? ({ kind: 'ok', output: '' } as const) : await work.sandbox.render(template, variables);
      if (outcome.kind === 'limit') {
        // The same template would hit the limit again: one finding, and the asset's other samples are left out.
        work.limitExceeded(outcome, asset, field, contactId);
        return samples;
      }
      if (outcome.kind === 'error') {
        work.errors.push({
          code: 'render_failed',
          message: `${asset.ref} failed to render for contact ${contactId}: ${field}${outcome.line ? ` line ${outcome.line}` : ''}: ${templateMessage(outcome.message)}`,
          assetRef: asset.ref,
          field,
          contactId,
          ...(outcome.line ? { line: outcome.line } : {}),
        });
        break;
      }
      rendered[field] = outcome.output;
    }
    if (rendered.subject === undefined || rendered.html === undefined) continue;
    samples.push({
      language,
      contactId,
      subject: cut(rendered.subject, SAMPLE_SUBJECT_CHARS),
      htmlExcerpt: excerpt(rendered.html, HTML_EXCERPT_CHARS),
      ...(rendered.text !== undefined ? { textExcerpt: excerpt(rendered.text, HTML_EXCERPT_CHARS) } : {}),
      digest: digestOf(rendered.subject, rendered.html, rendered.text),
      ...(preview ? { html: rendered.html } : {}),
      ...(text && rendered.text !== undefined ? { text: rendered.text } : {}),
    });
  }
  return samples;
}
