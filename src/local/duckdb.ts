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
export type DuckDBBlobVector = NodeApi.DuckDBBlobVector;
