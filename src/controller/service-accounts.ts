/**
 * Which ServiceAccounts exist in the watched namespaces, for kinds whose actions run as one: a
 * metadata-only watch (started the first time a reconcile asks), so the reconciler learns it with
 * no API request, and a ServiceAccount created or deleted re-checks the CRs that run as it at once
 * (deleted: they say so; created again: they recover) instead of at their next period.
 *
 * The API server would let the operator impersonate a ServiceAccount that does not exist (and a
 * RoleBinding naming it would still apply), so existence is checked here, not left to RBAC.
 */
import type { Logger } from 'pino';
import { Informer } from '../kube/informer.js';
import { CoreResources } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { KubeObject } from '../kube/types.js';
import type { ServiceAccountLookup } from '../core/ports.js';
import { errorMessage } from '../lib/errors.js';

export interface ServiceAccountCacheOptions {
  readonly client: KubeClient;
  /** Namespaces to watch; [] = all (one cluster-wide watch). */
  readonly namespaces: readonly string[];
  readonly log: Logger;
  /** A ServiceAccount appeared or went (not reported for the first LIST); should only enqueue. */
  readonly onChange: (namespace: string, name: string) => void;
  /** How long a reconcile waits for the first LIST before failing; default 20 s. */
  readonly syncTimeoutMs?: number;
}

const ALL = '';

export class ServiceAccountCache implements ServiceAccountLookup {
  private informers: Map<string, Informer<KubeObject>> | undefined;
  /** Informers past their first LIST: only their events are changes worth reporting. */
  private readonly live = new Set<string>();
  private stopped = false;

  constructor(private readonly opts: ServiceAccountCacheOptions) {}

  async exists(namespace: string, name: string): Promise<boolean> {
    const informer = this.start().get(this.opts.namespaces.length === 0 ? ALL : namespace);
    if (informer === undefined) throw new Error(`namespace ${namespace} is not watched, so its ServiceAccounts are not known`);
    try {
      await informer.waitForSync(AbortSignal.timeout(this.opts.syncTimeoutMs ?? 20_000));
    } catch (err) {
      const why = informer.lastError === undefined ? errorMessage(err) : errorMessage(informer.lastError);
      throw new Error(
        `cannot tell whether ServiceAccount ${namespace}/${name} exists: the operator could not list ServiceAccounts (${why}); ` +
          'grant it list and watch on serviceaccounts (chartpilot generate rbac does)',
        { cause: err },
      );
    }
    return informer.get(namespace, name) !== undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...(this.informers?.values() ?? [])].map((i) => i.stop()));
  }

  private start(): Map<string, Informer<KubeObject>> {
    if (this.informers !== undefined) return this.informers;
    const informers = new Map<string, Informer<KubeObject>>();
    this.informers = informers;
    if (this.stopped) return informers;
    const scopes = this.opts.namespaces.length === 0 ? [ALL] : [...new Set(this.opts.namespaces)];
    for (const scope of scopes) {
      const changed = (obj: KubeObject): void => {
        if (this.live.has(scope) && obj.metadata.namespace !== undefined) this.opts.onChange(obj.metadata.namespace, obj.metadata.name);
      };
      const informer = new Informer<KubeObject>({
        client: this.opts.client,
        resource: CoreResources.serviceAccount,
        ...(scope === ALL ? {} : { namespace: scope }),
        metadataOnly: true,
        log: this.opts.log,
        handlers: { onAdd: changed, onDelete: changed },
      });
      informers.set(scope, informer);
      informer.start();
      // The first LIST's adds are fired before its waiters resolve, so they are not reported.
      void informer.waitForSync().then(
        () => this.live.add(scope),
        () => undefined,
      );
    }
    this.opts.log.info({ namespaces: this.opts.namespaces.length === 0 ? 'all' : this.opts.namespaces }, 'watching ServiceAccounts: a kind runs as one');
    return informers;
  }
}
