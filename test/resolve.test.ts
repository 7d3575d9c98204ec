/**
 * Issue 22, item 1: the one resolver of ids (src/local/resolve.ts, Backend.resolve) on a small
 * dataset, in process, and the words the look-ups make of its answer (src/commands/ids.ts).
 */
import { describe, expect, it } from 'vitest';
import type { IdResolution } from '../src/backend.js';
import { commandFor, namesHint, nearestHint } from '../src/commands/ids.js';
import { csv, shop, withBackend } from './helpers.js';

/** Orders of contact p 7 (an id with a blank); automation au-1 counts under campaign id CMP-9; smartflow flow-1 with delivery dl-1. */
const dir = () =>
  shop({
    orders: ['A-100', 'A-101'].map((id, i) => ({ id, contact: 'p 7', at: `2024-02-0${i + 1}T08:00:00Z` })),
    touches: [
      { contact: 'p 7', at: '2024-01-31T08:00:00Z', type: 'automation', source: 'au-1' },
      { contact: 'p 8', at: '2024-01-30T08:00:00Z', type: 'smartflow', source: 'node-1' },
    ],
    sources: [
      ['automation', 'au-1', 'Cart reminder', 'CMP-9', '', '', '', '', ''],
      ['smartflow', 'node-1', 'Onboarding: day 1', '', 'flow-1', 'Onboarding', 'dl-1', 'Day one', ''],
    ],
    files: { 'contacts.csv': csv(['contact_id', 'client_contact_id', 'email', 'first_name', 'surname'], [['p 7', 'X-7', 'Eva.Kral@example.com', 'Eva', 'Kral']]) },
  });

const resolve = (ids: string[]) => withBackend(dir(), (backend) => Promise.all(ids.map((id) => backend.resolve(id))));
const kinds = (r: IdResolution) => r.matches.map((m) => `${m.kind} ${m.by} ${m.id}`);

describe('the resolver of ids', () => {
  it('recognises an order, a contact by id, e-mail (any case) or client id, a source by id, name or campaign id, a smartflow and a delivery', async () => {
    const answers = await resolve(['A-100', 'p 7', 'eva.KRAL@example.com', 'X-7', 'au-1', 'Cart reminder', 'CMP-9', 'flow-1', 'dl-1', '  A-101 ']);
    expect(answers.map(kinds)).toEqual([
      ['order id A-100'],
      ['contact id p 7'],
      ['contact email p 7'],
      ['contact clientContactId p 7'],
      ['source id au-1'],
      ['source name au-1'],
      ['source campaignId au-1'],
      ['smartflow id flow-1'],
      ['delivery id dl-1'],
      ['order id A-101'],
    ]);
    expect(answers[1]!.matches[0]!.name).toBe('Eva Kral');
    expect(answers[8]!.matches[0]).toEqual({ kind: 'delivery', by: 'id', id: 'dl-1', type: 'smartflow', name: 'Day one', smartflowId: 'flow-1' });
    expect(answers[9]!.id).toBe('A-101');
  });

  it('else names the nearest ids of each kind, any case, and the first sources', async () => {
    const [upper, far] = await resolve(['a-100', 'qqqqqqqqqqqq']);
    expect(upper!.matches).toEqual([]);
    expect(upper!.nearest.filter((m) => m.kind === 'order').map((m) => m.id)).toEqual(['A-100', 'A-101']);
    expect(far!.nearest).toEqual([]);
    expect(far!.sources.map((m) => `${m.type}:${m.id}`)).toEqual(['automation:au-1', 'smartflow:node-1']);
  });
});

describe('the words of a look-up', () => {
  const resolution = (matches: IdResolution['matches'], nearest: IdResolution['nearest'] = []): IdResolution => ({ id: 'x 1', matches, nearest, sources: [] });
  const match = (kind: IdResolution['matches'][number]['kind'], by: IdResolution['matches'][number]['by'], id: string, name: string | null, extra = {}) => ({ kind, by, id, type: kind === 'source' ? 'campaign' : null, name, smartflowId: null, ...extra });

  it('says what an id is and the command to run, quoted for a shell', () => {
    expect(namesHint(resolution([]), [match('contact', 'email', 'p 7', 'Eva Kral')])).toBe("x 1 is the e-mail of contact p 7 (Eva Kral): convx contact 'p 7'");
    expect(namesHint(resolution([]), [match('source', 'name', 'k 1', 'Spring sale')])).toBe("x 1 is the name of campaign k 1: convx drill 'k 1'");
    expect(namesHint(resolution([]), [match('order', 'id', 'x 1', null), match('delivery', 'id', 'x 1', 'Day one', { smartflowId: 'f/1' })])).toBe(
      "x 1 is an order: convx order 'x 1'\n      x 1 is a delivery of smartflow f/1 (\"Day one\"): convx drill /v1/deliveries/f%2F1/x%201/conversions",
    );
    expect(commandFor(match('smartflow', 'id', 'flow-1', null))).toBe('convx drill smartflow:flow-1');
  });

  it('suggests the nearest ids of the kinds asked, with their names, at most three', () => {
    const near = resolution([], [match('order', 'id', 'x 2', null), match('contact', 'id', 'x-1', 'Eva'), match('source', 'id', 'x1', 'Sale')]);
    expect(nearestHint(near, ['contact', 'source'])).toBe('did you mean x-1 (Eva), x1 "Sale"?');
    expect(nearestHint(near, ['smartflow'])).toBeUndefined();
  });
});
