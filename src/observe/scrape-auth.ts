/**
 * `--metrics-require-rbac`: each scrape carries a bearer token; the API server says whose it is
 * (TokenReview) and whether that user may `get` the path (SubjectAccessReview on a non-resource
 * URL), the contract of operator-sdk's `metrics-reader` ClusterRole. Answers are cached briefly
 * (bounded, short TTL) so a scrape every few seconds does not cost two API calls each; a review
 * that fails is never cached and denies the scrape (fail closed).
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { NonResourceAccess, Reviewer, TokenReviewResult, AccessReviewResult } from '../kube/reviews.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { TokenBucket } from '../lib/token-bucket.js';
import { TtlCache } from '../lib/ttl-cache.js';

export type ScrapeDecision =
  | { readonly status: 200; readonly user: string }
  | { readonly status: 401 | 403 | 429 | 503; readonly message: string };

export interface ScrapeAuthOptions {
  readonly reviewer: Reviewer;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Per cache (tokens, access decisions). */
  readonly maxEntries?: number;
  /** How long a positive answer (authenticated, allowed) is reused. */
  readonly allowTtlMs?: number;
  /** How long a negative answer is reused: short, so a new RoleBinding takes effect soon. */
  readonly denyTtlMs?: number;
  /** TokenReviews of tokens not in the cache: at most this many at once… */
  readonly reviewBurst?: number;
  /** …and this many per second after that. */
  readonly reviewsPerSecond?: number;
}

/**
 * Reviews of unknown tokens are bounded per process: anyone who reaches the port can send a new
 * token with every request, and each would otherwise cost a TokenReview (an API server request).
 * A scraper's token is reviewed once per allowTtlMs, far below the rate.
 */
const DEFAULTS = { maxEntries: 1024, allowTtlMs: 30_000, denyTtlMs: 10_000, reviewBurst: 10, reviewsPerSecond: 2 } as const;

export class ScrapeAuthorizer {
  private readonly tokens: TtlCache<string, TokenReviewResult>;
  private readonly access: TtlCache<string, AccessReviewResult>;
  // Concurrent scrapes with one token share one review instead of each asking.
  private readonly inflight = new Map<string, Promise<unknown>>();
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;
  private readonly reviews: TokenBucket;

  constructor(private readonly opts: ScrapeAuthOptions) {
    const clock = opts.clock ?? realClock;
    this.reviews = new TokenBucket(opts.reviewBurst ?? DEFAULTS.reviewBurst, opts.reviewsPerSecond ?? DEFAULTS.reviewsPerSecond, clock);
    const max = opts.maxEntries ?? DEFAULTS.maxEntries;
    this.tokens = new TtlCache(max, clock);
    this.access = new TtlCache(max, clock);
    this.allowTtlMs = opts.allowTtlMs ?? DEFAULTS.allowTtlMs;
    this.denyTtlMs = opts.denyTtlMs ?? DEFAULTS.denyTtlMs;
  }

  /** Decides a request from its `Authorization` header and what it asks for. */
  async check(authorization: string | undefined, want: NonResourceAccess): Promise<ScrapeDecision> {
    const token = bearerToken(authorization);
    if (token === undefined) {
      return { status: 401, message: 'Unauthorized: send a Kubernetes bearer token (Authorization: Bearer <token>)' };
    }
    // Keyed by a digest: the cache never holds a usable token.
    const tokenKey = createHash('sha256').update(token).digest('hex');
    const reviewKey = `t:${tokenKey}`;
    if (this.tokens.get(reviewKey) === undefined && !this.inflight.has(reviewKey) && !this.reviews.take()) {
      this.opts.log.debug('metrics scrape refused: too many unknown tokens to review');
      return { status: 429, message: 'Too Many Requests: too many new bearer tokens to review right now; try again in a few seconds' };
    }
    let identity: TokenReviewResult;
    try {
      identity = await this.cached(this.tokens, reviewKey, () => this.opts.reviewer.reviewToken(token), (r) => r.authenticated);
    } catch (err) {
      this.opts.log.warn({ err: errorMessage(err) }, 'metrics scrape refused: the token review failed');
      return { status: 503, message: `cannot verify the token: the TokenReview failed (${errorMessage(err)}); try again` };
    }
    if (!identity.authenticated) {
      this.opts.log.debug('metrics scrape refused: token not authenticated');
      return { status: 401, message: 'Unauthorized: the API server does not accept this token' };
    }
    const user = identity.user;
    const accessKey = `a:${tokenKey}:${want.verb}:${want.path}`;
    let decision: AccessReviewResult;
    try {
      decision = await this.cached(this.access, accessKey, () => this.opts.reviewer.reviewAccess(user, want), (r) => r.allowed);
    } catch (err) {
      this.opts.log.warn({ user: user.username, err: errorMessage(err) }, 'metrics scrape refused: the access review failed');
      return { status: 503, message: `cannot authorize ${user.username}: the SubjectAccessReview failed (${errorMessage(err)}); try again` };
    }
    if (!decision.allowed) {
      this.opts.log.debug({ user: user.username }, 'metrics scrape forbidden');
      return {
        status: 403,
        message:
          `Forbidden: ${user.username} may not ${want.verb} ${want.path}` +
          `${decision.reason === '' ? '' : ` (${decision.reason})`}; bind it to the metrics-reader ClusterRole`,
      };
    }
    return { status: 200, user: user.username };
  }

  private async cached<V>(cache: TtlCache<string, V>, key: string, ask: () => Promise<V>, positive: (v: V) => boolean): Promise<V> {
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const pending = this.inflight.get(key) as Promise<V> | undefined;
    if (pending !== undefined) return pending;
    const fresh = ask().then((v) => {
      cache.set(key, v, positive(v) ? this.allowTtlMs : this.denyTtlMs);
      return v;
    });
    this.inflight.set(key, fresh);
    try {
      return await fresh;
    } finally {
      this.inflight.delete(key);
    }
  }
}

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/iu.exec(header ?? '');
  return match?.[1];
}

