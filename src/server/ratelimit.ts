/**
 * A per-client token bucket: each key may make `perMinute` requests in a burst,
 * and regains one every 60/perMinute seconds. Keys are opaque strings the caller
 * derives (a digest, never a credential). Idle buckets are forgotten, so the
 * memory held is bounded by the number of clients active within a minute.
 */
import { createHash } from 'node:crypto';

export type RateDecision = { allowed: true; remaining: number } | { allowed: false; retryAfterSeconds: number };

/**
 * The IETF draft's rate-limit fields (draft-ietf-httpapi-ratelimit-headers): the quota
 * (the burst), the requests left now, and the seconds until the bucket is full again.
 */
export interface RateState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  private lastSweep: number;

  constructor(
    /** Requests per minute per key; also the burst size. */
    readonly perMinute: number,
    private readonly now: () => number = () => Date.now(),
  ) {
    if (!(perMinute > 0)) throw new RangeError('perMinute must be positive');
    this.perMs = perMinute / 60_000;
    this.lastSweep = now();
  }

  /** Takes one request from the key's bucket. */
  take(key: string): RateDecision {
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, remaining: Math.floor(bucket.tokens) };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }

  /**
   * Gives back the request taken last for the key (an answer that does not count, such
   * as a 304); never above the burst.
   */
  giveBack(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.perMinute, bucket.tokens + 1);
  }

  /** The key's quota as the RateLimit-* headers carry it, at this moment. */
  state(key: string): RateState {
    const now = this.now();
    const bucket = this.buckets.get(key);
    const tokens = bucket ? Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.perMs) : this.perMinute;
    return {
      limit: this.perMinute,
      remaining: Math.max(0, Math.floor(tokens)),
      resetSeconds: Math.max(0, Math.ceil((this.perMinute - tokens) / this.perMs / 1000)),
    };
  }

  /** How many keys are tracked now (for tests). */
  get size(): number {
    return this.buckets.size;
  }

  /** Drops buckets that have refilled completely: they are the same as no bucket. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.perMinute) this.buckets.delete(key);
    }
  }
}

/**
 * The rate-limit key of a verified token: its plugin and subject when it has a
 * subject, else a digest of the token's signed part (header and payload). The
 * signature is left out: base64url lets a signature be spelled several ways
 * that all verify, and each spelling must not get a bucket of its own. Only a
 * SHA-256 digest is kept.
 */
export function rateKey(plugin: string, subject: string | undefined, token: string): string {
  const signed = token.split('.').slice(0, 2).join('.');
  const identity = subject === undefined ? `token\u0000${signed}` : `sub\u0000${plugin}\u0000${subject}`;
  return createHash('sha256').update(identity).digest('base64url');
}
