/**
 * An in-memory leader lease for tests of the election algorithm: one `FakeLease` with
 * resourceVersion semantics, shared by any number of `FakeLeaseStore` handles (one per candidate)
 * whose failures and hangs the test controls.
 */
import { LeaseConflictError, type LeaseRecord, type LeaseSnapshot, type LeaseStore } from '../../../src/controller/leader-election/elector.js';

/** One Lease object with resourceVersion semantics, shared by any number of store handles. */
export class FakeLease {
  snapshot: LeaseSnapshot | undefined;
  private version = 0;
  writes = 0;

  put(record: LeaseRecord): LeaseSnapshot {
    this.writes++;
    this.snapshot = { record, resourceVersion: String(++this.version) };
    return this.snapshot;
  }
}

/** A LeaseStore over a FakeLease whose failures the test controls. */
export class FakeLeaseStore implements LeaseStore {
  readonly description = 'ns/lock';
  /** Thrown by every call while set. */
  failWith: Error | undefined;
  /** Calls never settle while set (a hung connection). */
  hang = false;
  calls = 0;

  constructor(readonly lease: FakeLease) {}

  private async gate(): Promise<void> {
    this.calls++;
    await Promise.resolve();
    if (this.hang) await new Promise<never>(() => undefined);
    if (this.failWith !== undefined) throw this.failWith;
  }

  async get(): Promise<LeaseSnapshot | undefined> {
    await this.gate();
    return this.lease.snapshot;
  }

  async create(record: LeaseRecord): Promise<LeaseSnapshot> {
    await this.gate();
    if (this.lease.snapshot !== undefined) throw new LeaseConflictError('exists');
    return this.lease.put(record);
  }

  async update(base: LeaseSnapshot, record: LeaseRecord): Promise<LeaseSnapshot> {
    await this.gate();
    if (this.lease.snapshot?.resourceVersion !== base.resourceVersion) throw new LeaseConflictError('conflict');
    return this.lease.put(record);
  }
}
