/**
 * DuckDB's Node package, the one place it is loaded. It is CommonJS: imported as an ES module,
 * Node first scans each of its 124 files for the names it exports, which doubles the package's
 * load (an import 125-129 ms, `require` 63-79 ms, measured in a fresh Node on the 2-core
 * machine), and every command that reads data pays it at start. Loaded with `require`, it is the
 * same module an import would give.
 */
import { createRequire } from 'node:module';
import type * as NodeApi from '@duckdb/node-api';
import type * as NodeBindings from '@duckdb/node-bindings';

const require = createRequire(import.meta.url);
const nodeApi = require('@duckdb/node-api') as typeof NodeApi;

/**
 * The native binding under the package (its own dependency, resolved from where it lies): for
 * reading many strings of a vector in one copy (db.ts, blobBytes), which the package does one by one.
 */
export const bindings = createRequire(require.resolve('@duckdb/node-api'))('@duckdb/node-bindings') as typeof NodeBindings;

export const { DuckDBInstance, JSDuckDBValueConverter } = nodeApi;
export type DuckDBInstance = NodeApi.DuckDBInstance;
export type DuckDBConnection = NodeApi.DuckDBConnection;
export type DuckDBDataChunk = NodeApi.DuckDBDataChunk;
export type DuckDBPreparedStatement = NodeApi.DuckDBPreparedStatement;
export type DuckDBResult = NodeApi.DuckDBResult;
export type DuckDBBlobVector = NodeApi.DuckDBBlobVector;
