import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AccessReviewResult, NonResourceAccess, Reviewer, ReviewedUser, TokenReviewResult } from '../../../src/kube/reviews.js';
import { bearerToken, ScrapeAuthorizer } from '../../../src/observe/scrape-auth.js';
import { FakeClock } from '../fakes/clock.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';

const METRICS: NonResourceAccess = { path: '/metrics', verb: 'get' };

/** Tokens map to users; users in `readers` may get /metrics. Counts every review asked. */
class FakeReviewer implements Reviewer {
  tokenReviews = 0;
  accessReviews = 0;
  failing = false;
  readonly users = new Map<string, string>([
    ['reader-token', 'system:serviceaccount:monitoring:prometheus'],
    ['other-token', 'system:serviceaccount:default:default'],
  ]);
  readonly readers = new Set(['system:serviceaccount:monitoring:prometheus']);
  lastAccess: { user: ReviewedUser; access: NonResourceAccess } | undefined;

  reviewToken(token: string): Promise<TokenReviewResult> {
    this.tokenReviews++;
    if (this.failing) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    const username = this.users.get(token);
    return Promise.resolve(username === undefined ? { authenticated: false, error: 'invalid bearer token' } : { authenticated: true, user: { username, groups: ['system:serviceaccounts'] } });
  }

  reviewAccess(user: ReviewedUser, access: NonResourceAccess): Promise<AccessReviewResult> {
    this.accessReviews++;
    this.lastAccess = { user, access };
    if (this.failing) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    const allowed = this.readers.has(user.username);
    return Promise.resolve({ allowed, reason: allowed ? 'RBAC: allowed by ClusterRoleBinding "metrics"' : '' });
  }
}

function setup(): { reviewer: FakeReviewer; clock: FakeClock; auth: ScrapeAuthorizer } {
  const reviewer = new FakeReviewer();
  const clock = new FakeClock();
  const auth = new ScrapeAuthorizer({ reviewer, clock, log: capturingLogger().log, allowTtlMs: 30_000, denyTtlMs: 10_000, maxEntries: 2 });
  return { reviewer, clock, auth };
}

describe('ScrapeAuthorizer', () => {
  it('401 without a bearer token, or with one the API server does not accept', async () => {
    const { auth, reviewer } = setup();
    for (const header of [undefined, '', 'Basic dXNlcjpwdw==', 'Bearer']) {
      const d = await auth.check(header, METRICS);
      assert.equal(d.status, 401, String(header));
    }
    assert.equal(reviewer.tokenReviews, 0, 'no token, no review');
    const bad = await auth.check('Bearer forged', METRICS);
    assert.deepEqual(bad, { status: 401, message: 'Unauthorized: the API server does not accept this token' });
    assert.equal(reviewer.accessReviews, 0);
  });

  it('403 naming the user when the access review says no, 200 when it says yes', async () => {
    const { auth, reviewer } = setup();
    const denied = await auth.check('Bearer other-token', METRICS);
    assert.equal(denied.status, 403);
    assert.match('message' in denied ? denied.message : '', /^Forbidden: system:serviceaccount:default:default may not get \/metrics; bind it to the metrics-reader ClusterRole$/);
    const allowed = await auth.check('bearer reader-token', METRICS);
    assert.deepEqual(allowed, { status: 200, user: 'system:serviceaccount:monitoring:prometheus' });
    assert.deepEqual(reviewer.lastAccess, {
      user: { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'] },
      access: { path: '/metrics', verb: 'get' },
    });
  });

  it('reuses answers within their time-to-live, negative ones for less long', async () => {
    const { auth, reviewer, clock } = setup();
    for (let i = 0; i < 5; i++) assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    assert.deepEqual([reviewer.tokenReviews, reviewer.accessReviews], [1, 1], 'five scrapes, one review each');
    assert.equal((await auth.check('Bearer other-token', METRICS)).status, 403);
    assert.deepEqual([reviewer.tokenReviews, reviewer.accessReviews], [2, 2]);

    // The denied user is granted the role: it takes effect once the negative answer expires.
    reviewer.readers.add('system:serviceaccount:default:default');
    await clock.advance(9_999);
    assert.equal((await auth.check('Bearer other-token', METRICS)).status, 403, 'still cached');
    await clock.advance(1);
    assert.equal((await auth.check('Bearer other-token', METRICS)).status, 200);
    assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    assert.deepEqual([reviewer.tokenReviews, reviewer.accessReviews], [2, 3], 'the token review of other-token was positive, so still cached');

    await clock.advance(30_000);
    assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    assert.deepEqual([reviewer.tokenReviews, reviewer.accessReviews], [3, 4], 'positive answers expire too');
  });

  it('fails closed with 503 when the API server cannot be asked, and caches no failure', async () => {
    const { auth, reviewer } = setup();
    reviewer.failing = true;
    const d = await auth.check('Bearer reader-token', METRICS);
    assert.equal(d.status, 503);
    assert.match('message' in d ? d.message : '', /^cannot verify the token: the TokenReview failed \(connect ECONNREFUSED 127\.0\.0\.1:6443\); try again$/);
    reviewer.failing = false;
    assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    reviewer.failing = true;
    assert.equal((await auth.check('Bearer reader-token', { path: '/other', verb: 'get' })).status, 503, 'an access review that fails denies too');
  });

  it('concurrent scrapes with one token share one review', async () => {
    const { auth, reviewer } = setup();
    const all = await Promise.all(Array.from({ length: 4 }, () => auth.check('Bearer reader-token', METRICS)));
    assert.deepEqual(all.map((d) => d.status), [200, 200, 200, 200]);
    assert.deepEqual([reviewer.tokenReviews, reviewer.accessReviews], [1, 1]);
  });

  it('stays bounded: more tokens than entries evict the oldest', async () => {
    const { auth, reviewer } = setup();
    reviewer.users.set('t3', 'u3');
    await auth.check('Bearer reader-token', METRICS);
    await auth.check('Bearer other-token', METRICS);
    await auth.check('Bearer t3', METRICS);
    const before = reviewer.tokenReviews;
    await auth.check('Bearer reader-token', METRICS);
    assert.equal(reviewer.tokenReviews, before + 1, 'evicted by the two newer tokens (maxEntries 2)');
  });

  it('bounds the reviews a flood of distinct bad tokens costs (429 beyond the rate), and still serves known tokens', async () => {
    const reviewer = new FakeReviewer();
    const clock = new FakeClock();
    const auth = new ScrapeAuthorizer({ reviewer, clock, log: capturingLogger().log, reviewBurst: 5, reviewsPerSecond: 2 });
    assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++) statuses.push((await auth.check(`Bearer bad-${String(i)}`, METRICS)).status);
    assert.equal(reviewer.tokenReviews, 5, 'the first review and 4 of the flood (burst 5)');
    assert.deepEqual([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 429).length], [4, 296]);
    // A known token is answered from the cache, flood or not; a known bad one stays 401.
    assert.equal((await auth.check('Bearer reader-token', METRICS)).status, 200);
    assert.equal((await auth.check('Bearer bad-0', METRICS)).status, 401);
    // Refilled at 2 per second.
    for (let s = 0; s < 10; s++) {
      await clock.advance(1000);
      for (let i = 0; i < 50; i++) await auth.check(`Bearer later-${String(s)}-${String(i)}`, METRICS);
    }
    assert.equal(reviewer.tokenReviews, 5 + 20, '10 s later: 2 more per second');
  });

  it('bearerToken reads the Authorization header like Kubernetes does', () => {
    assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
    assert.equal(bearerToken('bearer   abc '), 'abc');
    assert.equal(bearerToken('Bearer a b'), undefined);
    assert.equal(bearerToken('Token abc'), undefined);
    assert.equal(bearerToken(undefined), undefined);
  });
});
