/** What the update of one scope (reattribute.ts, sums.ts) works with, and the model inputs it gives the relations of models/. */
import type { Scope } from '../attribution.js';
import type { Dataset } from '../dataset.js';
import type { ModelInput } from '../models/relation.js';
import { TABLE_NAMES, type TableName } from '../schema.js';
import { ident, literal, sql, type Sql } from '../sql.js';

/** What the update of a scope works with: the scope over every row, its work schema, the new rows and the stored rows' counts. */
export interface Update {
  readonly scope: Scope;
  /** The in-memory schema of the work tables. */
  readonly work: string;
  /** The new rows of the update (n_<name>, read alone). */
  readonly fresh: Dataset;
  /** Each table's rows before the update. */
  readonly storedRows: ReadonlyMap<TableName, number>;
}

/** A work table of the update. */
export const workTable = (u: Update, name: string): Sql => sql`${ident(u.work)}.${ident(name)}`;

/** A model input over the update's scope: the names given in own, the dataset's tables (every row), the rest work tables. */
export function modelInput(u: Update, own: Record<string, Sql> = {}): ModelInput {
  return {
    db: u.scope.db,
    schema: u.work,
    referenceCurrency: u.scope.referenceCurrency,
    relation: (name) => own[name] ?? ((TABLE_NAMES as readonly string[]).includes(name) ? u.scope.relation(name) : workTable(u, name)),
    has: (t) => u.scope.dataset.has(t),
  };
}

/** A day for SQL, as a constant (so that conv's zonemaps, in time order, skip the other days). */
export function day(value: string): Sql {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) throw new Error(`internal: bad day ${JSON.stringify(value)}`);
  return sql`DATE ${literal(value)}`;
}

