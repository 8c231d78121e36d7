/**
 * What CRs depend on (their entries' `dependsOn`), across every kind this operator serves: each
 * check records the CR's edges, finds a cycle through them at once, and judges each dependency
 * from a cache of its kind. The cache keeps only what readiness needs (generation, Ready,
 * observedGeneration) of every CR of a depended-on kind, whichever shard reconciles it, so a
 * dependency Ready on another replica is seen here, and its change re-checks exactly the CRs that
 * wait for it.
 */
import type { Logger } from 'pino';
import { Informer } from '../kube/informer.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import { DependencyReasons, type DependencyCheck, type DependencyVerdict, type Dependencies } from '../core/dependencies.js';
import { findCycle, notReadyBecause, resolveKind, splitDependencies, type DependencyState, type ServedKind } from '../config/depends-on.js';
import { errorMessage } from '../lib/errors.js';
import { canonicalJson } from '../lib/json.js';

export interface DependencyGraphOptions {
  readonly client: KubeClient;
  /** Namespaces the operator watches; [] = all. */
  readonly namespaces: readonly string[];
  readonly log: Logger;
  /** The kinds served now (hot reload changes them), with the resource each is served as. */
  readonly served: () => readonly { readonly kind: ServedKind; readonly resource: ApiResource }[];
  /** How long a check waits for a kind's first LIST; default 20 s. */
  readonly syncTimeoutMs?: number;
}

const ALL = '';
const NOTHING: ReadonlySet<string> = new Set();

/** `Kind.group/namespace/name`: one CR in the graph. */
type NodeId = string;

export class DependencyGraph {
  /** CR → what it depends on, and how to re-check it. */
  private readonly edges = new Map<NodeId, { readonly on: ReadonlySet<NodeId>; readonly tell: () => void }>();
  /** CR → the CRs that depend on it. */
  private readonly dependents = new Map<NodeId, Set<NodeId>>();
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private stopped = false;

  constructor(private readonly opts: DependencyGraphOptions) {}

  /** The port of one kind (`Kind.group`); `tell(key)` re-checks one of its CRs (should only enqueue). */
  forKind(ownerKind: string, tell: (key: string) => void): Dependencies {
    return {
      split: splitDependencies,
      check: (input) => this.check(`${ownerKind}/${input.key}`, input, () => {
        tell(input.key);
      }),
      forget: (key) => {
        this.setEdges(`${ownerKind}/${key}`, NOTHING, () => undefined);
      },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private async check(owner: NodeId, input: DependencyCheck, tell: () => void): Promise<DependencyVerdict> {
    const served = this.opts.served();
    const field = input.settings.specField;
    const nodes: { id: NodeId; what: string; resource: ApiResource; namespace: string; name: string; kindKey: string }[] = [];
    const refuse = (reason: string, message: string): DependencyVerdict => {
      this.setEdges(owner, NOTHING, tell);
      return { kind: 'problem', reason, message: `${message}. Nothing is installed or upgraded until it is fixed; the deployed release is left as it is` };
    };
    for (const [i, ref] of input.dependencies.entries()) {
      const label = `spec.${field}[${String(i)}]`;
      const namespace = ref.namespace ?? input.namespace;
      if (namespace !== input.namespace && !input.settings.allowCrossNamespace) {
        return refuse(DependencyReasons.invalid, `${label} names ${ref.kind} ${namespace}/${ref.name}, in another namespace; this kind's watches entry does not allow that (dependsOn.allowCrossNamespace)`);
      }
      const resolved = resolveKind(ref, served.map((s) => s.kind));
      if (!resolved.ok) return refuse(DependencyReasons.invalid, `${label}: ${resolved.problem}`);
      // As the kind's own reconciler names itself (ownerKind): `Kind.group`, or `Kind` for the core group.
      const kindKey = resolved.kind.group === '' ? resolved.kind.kind : `${resolved.kind.kind}.${resolved.kind.group}`;
      const resource = served.find((s) => s.kind.kind === resolved.kind.kind && s.kind.group === resolved.kind.group)?.resource;
      if (resource === undefined) return refuse(DependencyReasons.invalid, `${label}: ${ref.kind} is not served any more`);
      const id = `${kindKey}/${namespace}/${ref.name}`;
      if (id === owner) return refuse(DependencyReasons.cycle, `${label} names this resource itself`);
      nodes.push({ id, what: `${ref.kind} ${namespace}/${ref.name}`, resource, namespace, name: ref.name, kindKey });
    }
    this.setEdges(owner, new Set(nodes.map((n) => n.id)), tell);
    const cycle = findCycle(owner, (id) => this.edges.get(id)?.on ?? NOTHING);
    if (cycle !== undefined) {
      return {
        kind: 'problem',
        reason: DependencyReasons.cycle,
        message: `dependency cycle: ${cycle.map(describeNode).join(' → ')}; none of them can be installed or upgraded until one stops depending on the next. The deployed releases are left as they are`,
      };
    }
    for (const [i, node] of nodes.entries()) {
      const informer = await this.informerFor(node.kindKey, node.resource, node.namespace);
      const why = notReadyBecause(stateOf(informer.get(node.namespace, node.name)), node.what);
      if (why !== undefined) {
        const which = nodes.length > 1 ? ` (dependency ${String(i + 1)} of ${String(nodes.length)})` : '';
        return { kind: 'waiting', message: `waiting for ${node.what}${which}: ${why}; nothing is installed or upgraded until every dependency is Ready` };
      }
    }
    return { kind: 'ready' };
  }

  /** Records what `owner` depends on; a change is told to those depending on `owner`, so a cycle through it is found from every side. */
  private setEdges(owner: NodeId, on: ReadonlySet<NodeId>, tell: () => void): void {
    const before = this.edges.get(owner)?.on ?? NOTHING;
    for (const id of before) {
      if (on.has(id)) continue;
      const set = this.dependents.get(id);
      set?.delete(owner);
      if (set?.size === 0) this.dependents.delete(id);
    }
    for (const id of on) {
      let set = this.dependents.get(id);
      if (set === undefined) this.dependents.set(id, (set = new Set()));
      set.add(owner);
    }
    if (on.size === 0) this.edges.delete(owner);
    else this.edges.set(owner, { on, tell });
    const changed = before.size !== on.size || [...on].some((id) => !before.has(id));
    if (changed) this.tellDependentsOf(owner);
  }

  private tellDependentsOf(id: NodeId): void {
    for (const owner of this.dependents.get(id) ?? []) this.edges.get(owner)?.tell();
  }

  /** The cache of `kindKey`'s CRs that covers `namespace`, started and listed once. */
  private async informerFor(kindKey: string, resource: ApiResource, namespace: string): Promise<Informer<KubeObject>> {
    const scope = this.opts.namespaces.length === 0 ? ALL : namespace;
    const key = `${kindKey}|${scope}`;
    let informer = this.informers.get(key);
    if (informer === undefined) {
      if (this.stopped) throw new Error('the operator is stopping');
      const changed = (before: KubeObject | undefined, after: KubeObject | undefined): void => {
        const obj = after ?? before;
        if (obj === undefined) return;
        if (before !== undefined && after !== undefined && canonicalJson(stateOf(before)) === canonicalJson(stateOf(after))) return;
        this.tellDependentsOf(`${kindKey}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
      };
      informer = new Informer<KubeObject>({
        client: this.opts.client,
        resource,
        ...(scope === ALL ? {} : { namespace: scope }),
        // Only what readiness needs stays in memory: no spec, no other status.
        transform: (obj) => ({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: slimMetadata(obj), status: slimStatus(obj) }),
        log: this.opts.log,
        handlers: {
          onAdd: (obj) => {
            changed(undefined, obj);
          },
          onUpdate: (old, obj) => {
            changed(old, obj);
          },
          onDelete: (obj) => {
            changed(obj, undefined);
          },
        },
      });
      this.informers.set(key, informer);
      informer.start();
      this.opts.log.info({ kind: kindKey, namespace: scope === ALL ? 'all' : scope }, 'watching a kind others depend on');
    }
    try {
      await informer.waitForSync(AbortSignal.timeout(this.opts.syncTimeoutMs ?? 20_000));
    } catch (err) {
      throw new Error(`cannot judge dependencies on ${kindKey}: its resources could not be listed (${errorMessage(informer.lastError ?? err)})`, { cause: err });
    }
    return informer;
  }
}

function slimMetadata(obj: KubeObject): KubeObject['metadata'] {
  const m = obj.metadata;
  return {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    ...(m.generation === undefined ? {} : { generation: m.generation }),
    ...(m.deletionTimestamp === undefined ? {} : { deletionTimestamp: m.deletionTimestamp }),
  };
}

interface Condition {
  readonly type?: unknown;
  readonly status?: unknown;
  readonly observedGeneration?: unknown;
  readonly message?: unknown;
}

function slimStatus(obj: KubeObject): Record<string, unknown> {
  const status = (obj as { status?: { observedGeneration?: unknown; conditions?: unknown } }).status;
  const conditions = Array.isArray(status?.conditions) ? (status.conditions as Condition[]) : [];
  const ready = conditions.find((c) => c.type === 'Ready');
  return {
    ...(typeof status?.observedGeneration === 'number' ? { observedGeneration: status.observedGeneration } : {}),
    ...(ready === undefined ? {} : { conditions: [{ type: 'Ready', status: ready.status, observedGeneration: ready.observedGeneration, message: typeof ready.message === 'string' ? ready.message.slice(0, 200) : undefined }] }),
  };
}

function stateOf(obj: KubeObject | undefined): DependencyState | undefined {
  if (obj === undefined) return undefined;
  const status = (obj as { status?: { observedGeneration?: unknown; conditions?: Condition[] } }).status;
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  return {
    generation: obj.metadata.generation,
    observedGeneration: typeof status?.observedGeneration === 'number' ? status.observedGeneration : undefined,
    ready:
      ready === undefined
        ? undefined
        : {
            status: typeof ready.status === 'string' ? ready.status : '',
            observedGeneration: typeof ready.observedGeneration === 'number' ? ready.observedGeneration : undefined,
            message: typeof ready.message === 'string' ? ready.message : undefined,
          },
    deleting: obj.metadata.deletionTimestamp !== undefined,
  };
}

/** `Kind.group/ns/name` → `Kind ns/name`. */
function describeNode(id: NodeId): string {
  const [kindKey = '', namespace = '', name = ''] = id.split('/');
  return `${kindKey.split('.')[0] ?? kindKey} ${namespace}/${name}`;
}
