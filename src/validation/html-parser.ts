/**
 * htmlparser2's Parser, the one way the validation's HTML checks read a template: loaded with
 * `require`, whose CommonJS build loads in about 22-27 ms where the ES module build takes 30-33
 * (Node scans an ES module package's files for their exports first).
 */
import { createRequire } from 'node:module';
import type * as Htmlparser2 from 'htmlparser2';

export const { Parser } = createRequire(import.meta.url)('htmlparser2') as typeof Htmlparser2;
