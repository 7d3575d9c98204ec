/**
 * DuckDB's Node package, the one place it is loaded. It is CommonJS: imported as an ES module,
 * Node first scans each of its 124 files for the names it exports, which doubles the package's
 * load (an import 125-129 ms, `require` 63-79 ms, measured in a fresh Node on the 2-core
 * machine), and every command that reads data pays it at start. Loaded with `require`, it is the
 * same module an import would give.
 */
import { createRequire } from 'node:module';
import type * as NodeApi from '@duckdb/node-api';

const nodeApi = createRequire(import.meta.url)('@duckdb/node-api') as typeof NodeApi;

export const { DuckDBInstance, JSDuckDBValueConverter } = nodeApi;
export type DuckDBInstance = NodeApi.DuckDBInstance;
export type DuckDBConnection = NodeApi.DuckDBConnection;
export type DuckDBDataChunk = NodeApi.DuckDBDataChunk;
export type DuckDBPreparedStatement = NodeApi.DuckDBPreparedStatement;
export type DuckDBResult = NodeApi.DuckDBResult;
export type DuckDBBlobVector = NodeApi.DuckDBBlobVector;
