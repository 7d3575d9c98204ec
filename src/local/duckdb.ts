/**
 * DuckDB's Node package, the one place it is loaded. The bundle (scripts/bundle.js) holds its
 * JavaScript, 124 small CommonJS files that Node's loader would otherwise find, read and compile
 * one by one at the start of every command that reads data: `require` of the package took 62-77
 * ms in a fresh Node on the 2-core machine, the bundle's chunk that holds it 45-51 ms (both with
 * the native binding's 18 ms); a report on the samples 5 % less wall time and 7 % less CPU. The
 * native binding, @duckdb/node-bindings, stays a package of its own, and a dependency of convx's
 * at the version DuckDB's package asks for, so that the bundle finds it wherever a package manager
 * puts it (test/startup.test.ts). Imported as an ES module (the tests, unbundled) Node first scans
 * each file for its exports: slower, once per process.
 */
import nodeApi from '@duckdb/node-api';
import type * as NodeApi from '@duckdb/node-api';
import nativeBindings from '@duckdb/node-bindings';

/**
 * The native binding: for reading many strings of a vector in one copy (db.ts, blobBytes), which
 * the package does one by one.
 */
export const bindings = nativeBindings;

export const { DuckDBInstance, JSDuckDBValueConverter } = nodeApi;
export type DuckDBInstance = NodeApi.DuckDBInstance;
export type DuckDBConnection = NodeApi.DuckDBConnection;
export type DuckDBDataChunk = NodeApi.DuckDBDataChunk;
export type DuckDBPreparedStatement = NodeApi.DuckDBPreparedStatement;
export type DuckDBResult = NodeApi.DuckDBResult;
export type DuckDBMaterializedResult = NodeApi.DuckDBMaterializedResult;
export type DuckDBBlobVector = NodeApi.DuckDBBlobVector;

/**
 * The rows of a materialised result (what `run()` answers) as objects of JavaScript values, named
 * and converted as DuckDBResultReader's readAll() and getRowObjectsJS() make them, its chunks taken
 * by index: the reader fetches each chunk, and then the end, through Node's thread pool, two trips
 * for the smallest result, about 0.1 ms of CPU (`SELECT 1` run and read: 0.29 ms so, 0.18 ms here).
 */
export function rowObjects(result: DuckDBMaterializedResult, from = 0, to = result.chunkCount, rows: Record<string, unknown>[] = []): Record<string, unknown>[] {
  const names = result.deduplicatedColumnNames();
  for (let c = from; c < to; c++) {
    const chunk = result.getChunk(c);
    for (let r = 0, n = chunk.rowCount; r < n; r++) {
      const row: Record<string, unknown> = {};
      chunk.visitRowValues(r, (value, _row, column, type) => {
        row[names[column]!] = JSDuckDBValueConverter(value, type, JSDuckDBValueConverter);
      });
      rows.push(row);
    }
  }
  return rows;
}
