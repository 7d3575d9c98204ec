/**
 * The checks of issue 20's mail-client support and content rules for one
 * asset, gathered in one call for src/local/validate.ts: the subject and
 * preheader rules, the HTML rules (content.ts) and the clients' support of
 * the HTML's features (clients.ts).
 */
import type { Finding } from '../model/validation.js';
import { clientFindings } from './clients.js';
import { htmlContentFindings, preheaderFindings, subjectFindings, type ContentFindings } from './content.js';
import { where, type ResolvedAsset } from './delivery.js';

/** The warnings and information of one asset, checked for `clients` (family.platform keys). */
export function moreAssetFindings(asset: ResolvedAsset, clients: readonly string[]): ContentFindings {
  const at = where(asset);
  const preheader = preheaderFindings(asset.content.preheader, at);
  const html = htmlContentFindings(asset.content.html, at);
  const support = clientFindings(asset.content.html ?? '', clients, at);
  const warnings: Finding[] = [...subjectFindings(asset.content.subject, at), ...preheader.warnings, ...html.warnings, ...support.warnings];
  return { warnings, information: [...preheader.information, ...html.information, ...support.information] };
}
