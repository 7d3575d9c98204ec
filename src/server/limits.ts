/**
 * The server's limits, each an option of `convx serve` with a default. Kept
 * apart from the server code so the CLI can show defaults without loading it.
 */
export interface ServerLimits {
  /** Largest request body in bytes; a larger one is a 413 problem. */
  bodyLimit: number;
  /** Requests per minute per token (also the burst); 0 turns the limit off. Over it: 429 with Retry-After. */
  rateLimitPerMinute: number;
  /**
   * Time budget of one request in milliseconds, from its arrival to its answer: waiting for its
   * turn, a connection, a DuckDB thread or a template renderer counts; 0 turns it off. Over it:
   * 503 with Retry-After, and a request still waiting leaves its queue without running.
   */
  queryTimeoutMs: number;
  /**
   * Milliseconds a request's headers and body may take to arrive (Node's requestTimeout); a body
   * that stops coming is a 408 problem and the connection is closed. 0 turns it off.
   */
  bodyTimeoutMs: number;
  /**
   * Milliseconds an answer may go without the client taking any of it (hooks/sending.ts); over it
   * the connection is closed, and the answer's memory freed. 0 turns it off. 30 s when left out.
   */
  sendTimeoutMs?: number;
  /** Requests of one plugin that run at once; undefined: half the connection pool (pool.ts defaultPluginConcurrency). */
  pluginConcurrency?: number;
  /** Requests of one token that run at once; undefined: as many as its plugin may. */
  tokenConcurrency?: number;
  /** Requests of one plugin that may wait for their turn; one more is a 503 busy problem. undefined: eight per pooled connection, at least 64. */
  pluginQueue?: number;
  /**
   * Connections open at once (Node's maxConnections); one more is closed as it comes, before a
   * request is read, so that idle or slow clients cannot use up the process's file descriptors.
   * 0 turns it off. DEFAULT_MAX_CONNECTIONS when left out.
   */
  maxConnections?: number;
}

/** Connections open at once by default: room for every client behind a proxy and more, far below a process's file descriptors. */
export const DEFAULT_MAX_CONNECTIONS = 4096;

export const DEFAULT_LIMITS: ServerLimits = {
  bodyLimit: 1024 * 1024,
  rateLimitPerMinute: 600,
  queryTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  sendTimeoutMs: 30_000,
};

/** Seconds the data a reload replaced still answers requests pinned to its version (convx serve --version-grace). */
export const DEFAULT_VERSION_GRACE_SECONDS = 60;

/** Longest request target (path and query) answered; a longer one is a 414 problem. */
export const MAX_URL_LENGTH = 8192;
/** Seconds a client is asked to wait after a 503 (shutdown drain, query over its budget). */
export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;
