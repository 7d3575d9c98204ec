/**
 * A scope's relations as `Sql`, for the modules on the sql tag. Scope (attribution.ts) gives
 * their text, made of identifiers it quoted itself; once it gives them as `Sql`
 * (`relation(name)`, `sources()`), these two become those calls.
 */
import type { Scope } from './attribution.js';
import { Sql } from './sql.js';

/** The scope's view of a dataset table (orders, touches, contacts…), or a relation of its attribution. */
export function relation(scope: Scope, name: string): Sql {
  return Sql.of([scope.table(name)], []);
}

/** The scope's sources, the first row of each (source_type, source_id), or an empty relation with their columns. */
export function firstSources(scope: Scope): Sql {
  return Sql.of([scope.firstSources()], []);
}
