/**
 * Narrow recording fakes of the reconcile core's ports (engines/helm/ports.ts): each keeps what it
 * was asked and answers what the test set up, so a test can assert the requests an action built,
 * the events it emitted and the status it wrote.
 */
import { pino, type Logger } from 'pino';
import type { CrStatus, CustomResource, KeepResult, ObjectRef, Release, StoredRevision } from '../../../src/core/model.js';
import type { KeepInput, KindScopes, ReleaseActions, ReleaseKeeperPort, ReleaseStore, RollbackRequest, StatusRequest, UninstallRequest, UpgradeInstallRequest } from '../../../src/engines/helm/ports.js';
import type { Confinement } from '../../../src/core/confinement.js';
import type { CrWriter, EventSink, EventType } from '../../../src/core/ports.js';

/** RFC 7386 applied, as the API server applies a merge patch: null takes a key off, objects merge, the rest replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const base = typeof target === 'object' && target !== null && !Array.isArray(target) ? (target as Record<string, unknown>) : {};
  const changes = patch as Record<string, unknown>;
  const kept = Object.entries(base).filter(([k]) => !(k in changes));
  const patched = Object.entries(changes).filter(([, v]) => v !== null).map(([k, v]) => [k, applyMergePatch(base[k], v)] as const);
  return Object.fromEntries([...kept, ...patched]);
}

export class RecordingWriter implements Pick<CrWriter, 'patchStatus' | 'setFinalizers'> {
  /** The status each write left on the CR (its merge patch applied to the CR's status it was sent with). */
  statuses: CrStatus[] = [];
  finalizerWrites = 0;
  /** Every finalizer list written, in order. */
  readonly finalizerLists: (readonly string[])[] = [];
  /** Answers like the API server: the new resourceVersion. */
  patchStatus(cr: CustomResource, patch: Readonly<Record<string, unknown>>): Promise<string | undefined> {
    this.statuses.push(applyMergePatch(cr.status ?? {}, patch) as CrStatus);
    return Promise.resolve(String(Number(cr.metadata.resourceVersion ?? '0') + 1));
  }
  /** Answers like the API server: the object with the new finalizers and a new resourceVersion. */
  setFinalizers(cr: CustomResource, finalizers: readonly string[]): Promise<CustomResource> {
    this.finalizerWrites++;
    this.finalizerLists.push(finalizers);
    const resourceVersion = String(Number(cr.metadata.resourceVersion ?? '0') + 1);
    return Promise.resolve({ ...cr, metadata: { ...cr.metadata, finalizers, resourceVersion } });
  }
  get last(): CrStatus | undefined {
    return this.statuses.at(-1);
  }
}

export interface RecordedEvent {
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

export class RecordingEvents implements EventSink {
  events: RecordedEvent[] = [];
  /** `<namespace>/<name>` of the CR each event of `events` is about. */
  readonly on: string[] = [];
  emit(cr: CustomResource, type: EventType, reason: string, message: string): void {
    this.events.push({ type, reason, message });
    this.on.push(`${cr.metadata.namespace ?? ''}/${cr.metadata.name}`);
  }
}

/** A release as helm reports it after a successful install or upgrade. */
export function helmRelease(revision: number, extra: Partial<Release> = {}): Release {
  return {
    name: 'demo',
    namespace: 'ns1',
    revision,
    status: 'deployed',
    chartName: 'webapp',
    chartVersion: '0.1.0',
    appVersion: '1.0',
    notes: `notes of revision ${revision}`,
    manifest: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n',
    description: '',
    ...extra,
  };
}

/** Helm's release actions: records every request; answers with what the test set. */
export class RecordingHelm implements ReleaseActions {
  readonly upgrades: UpgradeInstallRequest[] = [];
  readonly uninstalls: UninstallRequest[] = [];
  readonly rollbacks: RollbackRequest[] = [];
  readonly statusCalls: { release: string; namespace: string; timeoutMs: number; impersonate: string | undefined }[] = [];
  upgradeResult: Release | Error = helmRelease(1);
  uninstallResult: 'uninstalled' | 'not-found' | Error = 'uninstalled';
  rollbackError: Error | undefined;
  statusResult: Release | undefined = helmRelease(1);

  upgradeInstall(req: UpgradeInstallRequest): Promise<Release> {
    this.upgrades.push(req);
    return answer(this.upgradeResult);
  }
  uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'> {
    this.uninstalls.push(req);
    return answer(this.uninstallResult);
  }
  rollback(req: RollbackRequest): Promise<void> {
    this.rollbacks.push(req);
    return this.rollbackError === undefined ? Promise.resolve() : Promise.reject(this.rollbackError);
  }
  status(req: StatusRequest): Promise<Release | undefined> {
    this.statusCalls.push({ release: req.release, namespace: req.namespace, timeoutMs: req.timeoutMs, impersonate: req.impersonate });
    return Promise.resolve(this.statusResult);
  }
}

function answer<T>(result: T | Error): Promise<T> {
  return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
}

/** Helm's release records: revisions as set; deletions recorded. */
export class RecordingStore implements ReleaseStore {
  stored: StoredRevision[] = [];
  readonly deleted: { namespace: string; revision: StoredRevision; impersonate: string | undefined }[] = [];
  deleteError: Error | undefined;
  revisions(): Promise<StoredRevision[]> {
    return Promise.resolve(this.stored);
  }
  deleteRevision(namespace: string, revision: StoredRevision, impersonate?: string): Promise<void> {
    if (this.deleteError !== undefined) return Promise.reject(this.deleteError);
    this.deleted.push({ namespace, revision, impersonate });
    return Promise.resolve();
  }
  /** Secret names of records that do not prove they were written for the CR asking. */
  readonly foreign = new Set<string>();
  foreignRevisions(_namespace: string, _release: string, _ownerUid: string, revisions: readonly StoredRevision[]): Promise<StoredRevision[]> {
    return Promise.resolve(revisions.filter((r) => this.foreign.has(r.secretName)));
  }
  sealKey(ownerUid: string): string {
    return Buffer.from(`key of ${ownerUid}`).toString('base64');
  }
}

/** The release keeper: records keep/remaining/forget calls and answers what the test set. */
export class FakeKeeper implements ReleaseKeeperPort {
  readonly kept: KeepInput[] = [];
  readonly forgotten: string[] = [];
  readonly asked: (readonly ObjectRef[])[] = [];
  keepResult: KeepResult | Error = { inventory: [], repaired: [], readiness: undefined };
  scopedKinds: readonly string[] = ['v1/Namespace', 'rbac.authorization.k8s.io/v1/ClusterRole'];
  left: ObjectRef[] = [];

  keep(input: KeepInput): Promise<KeepResult> {
    this.kept.push(input);
    return answer(this.keepResult);
  }
  namespacedKinds: readonly string[] = ['v1/ConfigMap', 'v1/Secret', 'v1/Service', 'apps/v1/Deployment'];
  /** Kinds `learnKinds` was asked about, and what it answers. */
  readonly learned: (readonly string[])[] = [];
  learnAnswer = false;

  kindScopes(): Promise<KindScopes> {
    return Promise.resolve({ clusterScoped: this.scopedKinds, namespaced: this.namespacedKinds });
  }
  learnKinds(kinds: readonly string[]): Promise<boolean> {
    this.learned.push(kinds);
    return Promise.resolve(this.learnAnswer);
  }
  forget(namespace: string, release: string): void {
    this.forgotten.push(`${namespace}/${release}`);
  }
  remaining(items: readonly ObjectRef[], _confinement: Confinement, _impersonate?: string): Promise<ObjectRef[]> {
    this.asked.push(items);
    return Promise.resolve(this.left);
  }
}

/** A pino logger whose lines (parsed) a test can read. */
export function capturingLogger(level = 'debug'): { log: Logger; lines: Record<string, unknown>[]; text: () => string } {
  const raw: string[] = [];
  const log = pino({ level }, { write: (s: string) => raw.push(s) });
  return {
    log,
    get lines() {
      return raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}
