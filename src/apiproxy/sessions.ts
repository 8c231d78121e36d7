/**
 * The open runs and their credentials: one random token per run, known to the proxy only by its
 * SHA-256 and compared in constant time, dead once the run closes. And what each run wrote, for
 * the engine's inventory and dependent watches.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** An object a run created, updated or deleted through the proxy. */
export interface SessionObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** The resource's plural name (`configmaps`), for building URLs without discovery. */
  readonly resource: string;
  readonly namespace?: string | undefined;
  readonly name: string;
  /** From the server's answer; undefined when it did not say (e.g. a delete answered with a Status without uid). */
  readonly uid?: string | undefined;
  /** The last write of this object in the run. */
  readonly action: 'created' | 'updated' | 'deleted';
}

/** A resource (and namespace) a run read. */
export interface SessionRead {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  /** undefined: cluster-scoped, or across all namespaces. */
  readonly namespace?: string | undefined;
}

export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Runs by token. `T` is what the proxy keeps per run. */
export class TokenTable<T> {
  private readonly byDigest = new Map<string, { readonly digest: Buffer; readonly value: T }>();

  add(token: string, value: T): void {
    const d = digest(token);
    this.byDigest.set(d.toString('hex'), { digest: d, value });
  }

  /** The run of `token`, if open. The lookup keys on the digest, so timing tells nothing of the token. */
  get(token: string): T | undefined {
    const d = digest(token);
    const entry = this.byDigest.get(d.toString('hex'));
    if (entry === undefined || !timingSafeEqual(entry.digest, d)) return undefined;
    return entry.value;
  }

  delete(token: string): void {
    this.byDigest.delete(digest(token).toString('hex'));
  }

  get size(): number {
    return this.byDigest.size;
  }
}

/** What one run wrote and read, deduplicated; objects in the order first written. */
export class SessionRecord {
  private readonly written = new Map<string, SessionObject>();
  private readonly read = new Map<string, SessionRead>();

  wrote(o: SessionObject): void {
    const key = `${o.apiVersion}\u0000${o.kind}\u0000${o.namespace ?? ''}\u0000${o.name}`;
    const before = this.written.get(key);
    // Created then updated in one run is still an object the run created.
    const action = before?.action === 'created' && o.action === 'updated' ? 'created' : o.action;
    this.written.set(key, { ...o, action, uid: o.uid ?? before?.uid });
  }

  readFrom(r: SessionRead): void {
    this.read.set(`${r.group}\u0000${r.version}\u0000${r.resource}\u0000${r.namespace ?? ''}`, r);
  }

  objects(): SessionObject[] {
    return [...this.written.values()];
  }

  reads(): SessionRead[] {
    return [...this.read.values()];
  }
}
