/**
 * Mail-client support (docs/validation.md, "Mail-client support"): the
 * features an HTML part uses (features.ts) against the caniemail data
 * (data/caniemail.json, vendored; read once, when a validation first needs
 * it), for the clients the request names by glob (`gmail.*,outlook.windows`).
 * A client's support of a feature is that of the latest version caniemail
 * tested; a feature some chosen clients do not support is
 * `client_unsupported` (a warning), one they support partly `client_partial`
 * (information).
 */
import { readFileSync } from 'node:fs';
import type { Finding } from '../model/validation.js';
import { plural } from '../words.js';
import { htmlFeatures } from './features.js';

/**
 * The clients checked when the request names none: those of the families with
 * the largest share of opens in the published market-share figures (Apple
 * Mail, Gmail, Outlook, Yahoo, Samsung Email; together well over 90 %), on
 * the platforms where they are read: not Gmail in a phone's browser
 * (gmail.mobile-webmail) nor the retired Windows Mail app (outlook.windows-mail).
 */
export const DEFAULT_CLIENTS = [
  'apple-mail.*',
  'gmail.desktop-webmail', 'gmail.ios', 'gmail.android',
  'outlook.windows', 'outlook.macos', 'outlook.outlook-com', 'outlook.ios', 'outlook.android',
  'yahoo.*',
  'samsung-email.*',
];

interface Feature {
  slug: string;
  title: string;
  /** The support of each client (`family.platform`): 'y', 'n', 'a' (partial) or 'u', with the notes of its latest version. */
  support: Map<string, { status: string; notes: string[] }>;
}

interface SupportData {
  features: Map<string, Feature>;
  /** Every `family.platform` of the data, sorted. */
  clients: string[];
  /** "Gmail Android" for gmail.android. */
  names: Map<string, string>;
}

interface RawFeature {
  slug: string;
  title: string;
  stats: Record<string, Record<string, Record<string, string>>>;
  notes_by_num?: Record<string, string> | null;
}
interface RawData {
  nicenames: { family: Record<string, string>; platform: Record<string, string> };
  data: RawFeature[];
}

/**
 * Features not judged: what an e-mail should have even where a client drops it
 * (the doctype, <body>, comments, which carry Outlook's conditional ones, the
 * accessibility attributes, the color-scheme meta), as the content checks advise.
 */
export const UNJUDGED_FEATURES = /^(html-doctype|html-body|html-comments|css-comments|html-lang|html-dir|html-role|html-aria-.*|html-meta-color-scheme)$/;

let loaded: SupportData | undefined;

/** The support of a client's latest tested version: "a #1 #3" is partial with notes 1 and 3. */
function latest(versions: Record<string, string>, notes: Record<string, string>): { status: string; notes: string[] } {
  const values = Object.values(versions);
  const value = values[values.length - 1] ?? 'u';
  const [status = 'u', ...refs] = value.split(/\s+/);
  return { status, notes: refs.map((ref) => notes[ref.replace('#', '')]).filter((n): n is string => Boolean(n)) };
}

/** The caniemail data, read and indexed once. */
export function supportData(): SupportData {
  if (loaded) return loaded;
  const raw = JSON.parse(readFileSync(new URL('./data/caniemail.json', import.meta.url), 'utf8')) as RawData;
  const features = new Map<string, Feature>();
  const clients = new Set<string>();
  for (const feature of raw.data) {
    const support = new Map<string, { status: string; notes: string[] }>();
    for (const [family, platforms] of Object.entries(feature.stats)) {
      for (const [platform, versions] of Object.entries(platforms)) {
        support.set(`${family}.${platform}`, latest(versions, feature.notes_by_num ?? {}));
        clients.add(`${family}.${platform}`);
      }
    }
    features.set(feature.slug, { slug: feature.slug, title: feature.title, support });
  }
  const names = new Map(
    [...clients].map((key) => {
      const [family, platform] = key.split('.') as [string, string];
      return [key, `${raw.nicenames.family[family] ?? family} ${raw.nicenames.platform[platform] ?? platform}`];
    }),
  );
  loaded = { features, clients: [...clients].sort(), names };
  return loaded;
}

/**
 * A glob of `family.platform` (`*` any characters) as a regular expression; a run of stars is one
 * (each `.*` more multiplies the matcher's work: ten stars in a row took 5.7 s of the main thread),
 * and a glob has at most MAX_GLOB_STARS (model/validation.ts).
 */
const globPattern = (glob: string) => new RegExp(`^${glob.replace(/\*+/g, '*').replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);

/**
 * The clients the globs select, in the data's order; `unknown`: why a glob selects none, listing
 * the valid clients (the request's invalid_request, or the --clients flag's usage error: exit 2).
 */
export function selectClients(globs: readonly string[] = DEFAULT_CLIENTS): { clients: string[]; unknown?: string } {
  const { clients: known } = supportData();
  const selected = new Set<string>();
  const unknown: string[] = [];
  for (const glob of globs) {
    const pattern = globPattern(glob.trim().toLowerCase());
    const matched = known.filter((client) => pattern.test(client));
    if (!matched.length) unknown.push(glob);
    for (const client of matched) selected.add(client);
  }
  if (unknown.length) {
    const message = `${unknown.map((g) => `"${g}"`).join(', ')} ${unknown.length === 1 ? 'matches' : 'match'} no mail client; valid clients (family.platform, * for any): ${known.join(', ')}`;
    return { clients: [], unknown: message };
  }
  return { clients: known.filter((client) => selected.has(client)) };
}

/** The first characters of a caniemail note. */
const note = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}…` : text);

/**
 * client_unsupported (warnings) and client_partial (information) of one HTML
 * part: a finding per feature, naming it, the clients, and the line it is first used on.
 */
export function clientFindings(html: string, clients: readonly string[], at: Omit<Finding, 'code' | 'message'>): { warnings: Finding[]; information: Finding[] } {
  const warnings: Finding[] = [];
  const information: Finding[] = [];
  if (!html || !clients.length) return { warnings, information };
  const { features, names } = supportData();
  for (const [slug, use] of htmlFeatures(html)) {
    const feature = features.get(slug);
    if (!feature || UNJUDGED_FEATURES.test(slug)) continue;
    const none: string[] = [];
    const partly: string[] = [];
    const notes = new Set<string>();
    for (const client of clients) {
      const support = feature.support.get(client);
      if (support?.status === 'n') none.push(names.get(client)!);
      if (support?.status === 'a') {
        partly.push(names.get(client)!);
        for (const text of support.notes) notes.add(note(text));
      }
    }
    const used = `${feature.title} (${slug}), first on line ${use.line}${use.count > 1 ? `, ${plural(use.count, 'use')}` : ''}`;
    const finding = (code: string, message: string): Finding => ({ code, message, ...at, field: 'html', line: use.line, count: use.count });
    if (none.length) warnings.push(finding('client_unsupported', `${used}: not supported by ${none.join(', ')}`));
    if (partly.length) {
      information.push(finding('client_partial', `${used}: partly supported by ${partly.join(', ')}${notes.size ? ` (${[...notes].join(' ')})` : ''}`));
    }
  }
  return { warnings, information };
}
