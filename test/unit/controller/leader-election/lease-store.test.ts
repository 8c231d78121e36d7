/**
 * The Lease store against a fake API server that keeps one Lease with resourceVersion semantics:
 * what is sent where, how the server's answers map onto the store's contract, and that two
 * electors over it elect exactly one leader.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaderElector, LeaseConflictError, type ElectionLog, type LeaseRecord } from '../../../../src/controller/leader-election/elector.js';
import { KubeLeaseStore } from '../../../../src/controller/leader-election/lease-store.js';
import { KubeApiError } from '../../../../src/kube/errors.js';
import { resourcePath } from '../../../../src/kube/resource.js';
import type { HttpVerb, KubeClient, RequestOptions } from '../../../../src/kube/rest.js';
import type { KubeObject } from '../../../../src/kube/types.js';
import { FakeClock, settle } from '../../fakes/clock.js';

const COLLECTION = '/apis/coordination.k8s.io/v1/namespaces/ops/leases';
const OBJECT = `${COLLECTION}/lock`;

interface Request {
  readonly method: HttpVerb;
  readonly path: string;
  readonly opts: RequestOptions;
}

/** One namespace `ops` holding at most one Lease `lock`, with the API server's write rules. */
class LeaseApi implements KubeClient {
  lease: KubeObject | undefined;
  readonly requests: Request[] = [];
  /** The next request fails with this instead. */
  failNext: Error | undefined;
  private rv = 10;

  request<T>(method: HttpVerb, path: string, opts: RequestOptions = {}): Promise<T> {
    this.requests.push({ method, path, opts });
    return new Promise<T>((resolve) => {
      resolve(this.serve(method, path, opts) as T);
    });
  }

  /** A write by someone else (kubectl, another replica). */
  touch(change: (o: KubeObject) => KubeObject): void {
    assert.ok(this.lease);
    this.lease = change(structuredClone(this.lease));
    this.lease.metadata.resourceVersion = String(++this.rv);
  }

  private serve(method: HttpVerb, path: string, opts: RequestOptions): unknown {
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure !== undefined) throw failure;
    const body = structuredClone(opts.body) as KubeObject;
    if (method === 'GET' && path === OBJECT) {
      if (this.lease === undefined) throw new KubeApiError('leases.coordination.k8s.io "lock" not found', { status: 404 });
      return structuredClone(this.lease);
    }
    if (method === 'POST' && path === COLLECTION) {
      if (this.lease !== undefined) throw new KubeApiError('leases.coordination.k8s.io "lock" already exists', { status: 409, reason: 'AlreadyExists' });
      const created = { ...body, metadata: { ...body.metadata, resourceVersion: String(++this.rv), uid: 'u1' } };
      if (opts.query?.dryRun !== 'All') this.lease = created;
      return structuredClone(created);
    }
    if (method === 'PUT' && path === OBJECT) {
      if (this.lease === undefined) throw new KubeApiError('leases.coordination.k8s.io "lock" not found', { status: 404 });
      if (body.metadata.resourceVersion !== this.lease.metadata.resourceVersion) {
        throw new KubeApiError('Operation cannot be fulfilled on leases.coordination.k8s.io "lock": the object has been modified', { status: 409, reason: 'Conflict' });
      }
      this.lease = { ...body, metadata: { ...body.metadata, resourceVersion: String(++this.rv), uid: 'u1' } };
      return structuredClone(this.lease);
    }
    throw new Error(`unexpected ${method} ${path}`);
  }

  watch(): never {
    throw new Error('not used');
  }

  resourceFor(): never {
    throw new Error('not used');
  }

  forward(): never {
    throw new Error('not used');
  }

  pathFor = resourcePath;
}

const record = (holderIdentity: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity,
  leaseDurationSeconds: 15,
  acquireTime: '2026-01-01T00:00:00.000000Z',
  renewTime: '2026-01-01T00:00:00.000000Z',
  leaseTransitions: 0,
  ...extra,
});

function store(api: LeaseApi, extra: { requestTimeoutMs?: number } = {}): KubeLeaseStore {
  return new KubeLeaseStore({ client: api, namespace: 'ops', name: 'lock', ...extra });
}

describe('KubeLeaseStore', () => {
  it('reads a missing lease as undefined, with a request deadline of half the renew deadline', async () => {
    const api = new LeaseApi();
    const s = store(api);
    assert.equal(s.description, 'ops/lock');
    assert.equal(await s.get(), undefined);
    assert.deepEqual(api.requests, [{ method: 'GET', path: OBJECT, opts: { timeoutMs: 5_000 } }]);
  });

  it('creates the Lease object, leaving out times it does not know', async () => {
    const api = new LeaseApi();
    const snap = await store(api).create(record('a', { acquireTime: undefined, renewTime: undefined }));
    assert.deepEqual(snap, { resourceVersion: '11', record: record('a', { acquireTime: undefined, renewTime: undefined }) });
    const [req] = api.requests;
    assert.equal(req?.method, 'POST');
    assert.equal(req.path, COLLECTION);
    assert.equal(req.opts.timeoutMs, 5_000);
    assert.equal(req.opts.query?.dryRun, undefined);
    assert.deepEqual(req.opts.body, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'lock', namespace: 'ops' },
      spec: { holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 },
    });
  });

  it('reads back what it wrote', async () => {
    const api = new LeaseApi();
    const s = store(api);
    const created = await s.create(record('a', { leaseTransitions: 2 }));
    assert.deepEqual(await s.get(), created);
  });

  it('updates against the resourceVersion it was given', async () => {
    const api = new LeaseApi();
    const s = store(api);
    const created = await s.create(record('a'));
    const updated = await s.update(created, record('a', { renewTime: '2026-01-01T00:00:02.000000Z' }));
    assert.equal(updated.record.renewTime, '2026-01-01T00:00:02.000000Z');
    assert.notEqual(updated.resourceVersion, created.resourceVersion);
    const put = api.requests.at(-1);
    assert.equal(put?.method, 'PUT');
    assert.equal(put.path, OBJECT);
    assert.equal((put.opts.body as KubeObject).metadata.resourceVersion, created.resourceVersion);
  });

  it('turns a lost race into LeaseConflictError: an existing lease on create, a stale resourceVersion on update', async () => {
    const api = new LeaseApi();
    const s = store(api);
    const created = await s.create(record('a'));
    await assert.rejects(s.create(record('b')), (err: unknown) => err instanceof LeaseConflictError && err.message === 'lease ops/lock changed meanwhile');
    api.touch((o) => o);
    await assert.rejects(s.update(created, record('a')), (err: unknown) => err instanceof LeaseConflictError && err.cause instanceof KubeApiError);
  });

  it('passes every other failure on unchanged', async () => {
    const api = new LeaseApi();
    const s = store(api);
    const forbidden = new KubeApiError('leases.coordination.k8s.io is forbidden', { status: 403 });
    api.failNext = forbidden;
    await assert.rejects(s.get(), (err: unknown) => err === forbidden);
    api.failNext = forbidden;
    await assert.rejects(s.create(record('a')), (err: unknown) => err === forbidden);
    const gone = await s.create(record('a'));
    api.lease = undefined;
    await assert.rejects(s.update(gone, record('a')), (err: unknown) => err instanceof KubeApiError && err.status === 404);
  });

  it('keeps labels and annotations others put on the lease through its updates', async () => {
    const api = new LeaseApi();
    const s = store(api);
    await s.create(record('a'));
    api.touch((o) => ({ ...o, metadata: { ...o.metadata, labels: { team: 'x' }, annotations: { note: 'y' } } }));
    const current = await s.get();
    assert.ok(current);
    await s.update(current, record('a'));
    assert.deepEqual(api.lease?.metadata.labels, { team: 'x' });
    assert.deepEqual(api.lease.metadata.annotations, { note: 'y' });
  });

  it('keeps the hand-over note in an annotation: written on release, kept through renewals, replaced by the next release', async () => {
    const api = new LeaseApi();
    const s = store(api);
    const created = await s.create(record('a'));
    const released = await s.update(created, record('', { handOver: 'aaaaaaaaaaaa-1' }));
    assert.deepEqual(api.lease?.metadata.annotations, { 'chartpilot.io/hand-over': 'aaaaaaaaaaaa-1' });
    assert.equal((await s.get())?.record.handOver, 'aaaaaaaaaaaa-1');
    const taken = await s.update(released, record('b', { handOver: released.record.handOver }));
    assert.equal(taken.record.handOver, 'aaaaaaaaaaaa-1');
    await s.update(taken, record('', { handOver: 'bbbbbbbbbbbb-2' }));
    assert.deepEqual(api.lease.metadata.annotations, { 'chartpilot.io/hand-over': 'bbbbbbbbbbbb-2' });
  });

  it("reads a Lease's missing fields as client-go's defaults", async () => {
    const api = new LeaseApi();
    api.lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'lock', namespace: 'ops', resourceVersion: '7' } };
    assert.deepEqual(await store(api).get(), {
      resourceVersion: '7',
      record: { holderIdentity: '', leaseDurationSeconds: 15, acquireTime: undefined, renewTime: undefined, leaseTransitions: 0 },
    });
  });

  it('checks at start-up with a dry-run create, which an existing lease passes and a missing namespace fails', async () => {
    const api = new LeaseApi();
    const s = store(api, { requestTimeoutMs: 1_234 });
    await s.checkWritable();
    assert.equal(api.lease, undefined, 'a dry run stores nothing');
    const [req] = api.requests;
    assert.equal(req?.method, 'POST');
    assert.deepEqual(req.opts.query, { dryRun: 'All' });
    assert.equal(req.opts.timeoutMs, 1_234);
    await s.create(record('a'));
    await s.checkWritable();
    api.failNext = new KubeApiError('namespaces "ops" not found', { status: 404 });
    await assert.rejects(s.checkWritable(), /namespaces "ops" not found/);
  });

  it('refuses options it cannot work with', () => {
    const api = new LeaseApi();
    assert.throws(() => new KubeLeaseStore({ client: api, namespace: '', name: 'lock' }), /namespace/);
    assert.throws(() => new KubeLeaseStore({ client: api, namespace: 'ops', name: '' }), /name/);
    assert.throws(() => store(api, { requestTimeoutMs: 0 }), /requestTimeoutMs/);
  });
});

describe('LeaderElector over KubeLeaseStore', () => {
  const quiet: ElectionLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

  it('elects exactly one of two candidates, and hands over on release', async () => {
    const clock = new FakeClock();
    const api = new LeaseApi();
    const elector = (identity: string): LeaderElector =>
      new LeaderElector({ store: store(api), identity, log: quiet, clock, wallClock: { now: () => clock.now() }, random: () => 0 });
    const a = elector('a');
    const b = elector('b');
    const results: Record<string, boolean> = {};
    void a.acquire(new AbortController().signal).then((r) => (results.a = r));
    void b.acquire(new AbortController().signal).then((r) => (results.b = r));
    await clock.advance(10_000);
    assert.deepEqual(results, { a: true });
    assert.equal((api.lease?.spec as { holderIdentity?: string }).holderIdentity, 'a');
    await a.release();
    await clock.advance(2_000);
    await settle();
    assert.deepEqual(results, { a: true, b: true });
    assert.equal((api.lease?.spec as { holderIdentity?: string; leaseTransitions?: number }).holderIdentity, 'b');
    assert.equal((api.lease?.spec as { leaseTransitions?: number }).leaseTransitions, 1);
    await b.release();
  });

  it('hands the stopping leader’s note to the next one, through its renewals', async () => {
    const clock = new FakeClock();
    const api = new LeaseApi();
    const elector = (identity: string): LeaderElector =>
      new LeaderElector({ store: store(api), identity, log: quiet, clock, wallClock: { now: () => clock.now() }, random: () => 0 });
    const a = elector('a');
    const b = elector('b');
    assert.equal(await a.acquire(new AbortController().signal), true);
    assert.equal(a.handOver, undefined, 'a new lease carries no note');
    let bLeads = false;
    void b.acquire(new AbortController().signal).then((r) => (bLeads = r));
    await clock.advance(4_000);
    await a.release('aaaaaaaaaaaa-1,aaaaaaaaaaaa-2');
    await clock.advance(2_000);
    await settle();
    assert.equal(bLeads, true);
    assert.equal(b.handOver, 'aaaaaaaaaaaa-1,aaaaaaaaaaaa-2');
    await clock.advance(10_000); // b renews several times
    assert.equal(api.lease?.metadata.annotations?.['chartpilot.io/hand-over'], 'aaaaaaaaaaaa-1,aaaaaaaaaaaa-2');
    await b.release();
    assert.equal(api.lease.metadata.annotations['chartpilot.io/hand-over'], 'aaaaaaaaaaaa-1,aaaaaaaaaaaa-2', 'a release without a note keeps the last one');
  });
});
