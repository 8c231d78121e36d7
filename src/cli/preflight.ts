/**
 * Start-up checks that turn the classic silent hangs (unreachable API server, missing CRD, missing
 * RBAC) into one clear message naming what is missing and how to fix it.
 */
import { apiVersionOf, type WatchEntry } from '../config/types.js';
import { isNotFound, KubeApiError } from '../kube/errors.js';
import { CoreResources, createObject, serverVersion } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource } from '../kube/types.js';
import { errorMessage } from '../lib/errors.js';

export class PreflightError extends Error {
  override readonly name = 'PreflightError';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

export async function checkApiServer(client: KubeClient, server: string): Promise<string> {
  try {
    return await serverVersion(client, { timeoutMs: 10_000 });
  } catch (err) {
    const why = errorMessage(err);
    if (err instanceof KubeApiError && err.status === 401) {
      // Reached, but it does not accept who we say we are: a wrong, expired or revoked token.
      throw new PreflightError([
        `the Kubernetes API server at ${server} rejected the credentials (401 ${why}): check the pod's service account token ` +
          `(/var/run/secrets/kubernetes.io/serviceaccount/token) or the user in KUBECONFIG.`,
      ]);
    }
    throw new PreflightError([
      `cannot reach the Kubernetes API server at ${server}: ${why}. Check KUBECONFIG (or the pod's service account) and that the cluster is running.`,
    ]);
  }
}

/** Finds the API resource of every watched kind; a kind without a CRD is a start-up error. */
export async function resolveResources(client: KubeClient, entries: readonly WatchEntry[]): Promise<Map<WatchEntry, ApiResource>> {
  const found = new Map<WatchEntry, ApiResource>();
  const problems: string[] = [];
  for (const entry of entries) {
    const apiVersion = apiVersionOf(entry);
    try {
      found.set(entry, await client.resourceFor(apiVersion, entry.kind));
    } catch (err) {
      if (isNotFound(err)) {
        problems.push(
          `the cluster has no CustomResourceDefinition for kind ${entry.kind} in ${apiVersion}: install it first ` +
            `(chartpilot generate crd --watches-file <file> | kubectl apply -f -)`,
        );
      } else {
        throw err;
      }
    }
  }
  if (problems.length > 0) throw new PreflightError(problems);
  return found;
}

export interface Check {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  /** One object (e.g. the ServiceAccount to impersonate); all of them when undefined. */
  readonly name?: string;
  /** undefined: all namespaces, or a cluster-scoped resource when `clusterScoped`. */
  readonly namespace: string | undefined;
  readonly clusterScoped?: boolean;
}

function describeCheck(c: Check): string {
  const res = `${c.resource}${c.subresource === undefined ? '' : `/${c.subresource}`}${c.group === '' ? '' : `.${c.group}`}`;
  if (c.clusterScoped === true) return `${c.verb} ${res} (cluster-scoped)`;
  const name = c.name === undefined ? '' : ` "${c.name}"`;
  return `${c.verb} ${res}${name} ${c.namespace === undefined ? 'in all namespaces' : `in namespace ${c.namespace}`}`;
}

/**
 * What `--metrics-require-rbac` needs to review each scrape: operator-sdk's `metrics-auth-role`.
 * Checked at start so a missing binding is one line now, not a 503 on every scrape later.
 */
export const SCRAPE_REVIEW_CHECKS: readonly Check[] = [
  { verb: 'create', group: 'authentication.k8s.io', resource: 'tokenreviews', namespace: undefined, clusterScoped: true },
  { verb: 'create', group: 'authorization.k8s.io', resource: 'subjectaccessreviews', namespace: undefined, clusterScoped: true },
];

/**
 * The permissions the operator cannot run without, for its kinds and Helm's storage. Without
 * `storageWrites` (every kind runs as a tenant's ServiceAccount, which writes Helm's records),
 * the operator only reads the release Secrets.
 */
export function requiredChecks(resources: readonly ApiResource[], namespaces: readonly string[], storageWrites = true): Check[] {
  const scopes: (string | undefined)[] = namespaces.length === 0 ? [undefined] : [...namespaces];
  const checks: Check[] = [];
  for (const namespace of scopes) {
    for (const r of resources) {
      for (const verb of ['get', 'list', 'watch', 'patch']) checks.push({ verb, group: r.group, resource: r.plural, namespace });
      checks.push({ verb: 'patch', group: r.group, resource: r.plural, subresource: 'status', namespace });
    }
    for (const verb of storageWrites ? ['list', 'get', 'create', 'update', 'delete'] : ['list', 'get']) checks.push({ verb, group: '', resource: 'secrets', namespace });
    checks.push({ verb: 'create', group: '', resource: 'events', namespace });
  }
  return checks;
}

/** Asks the API server (SelfSubjectAccessReview) whether this identity may do each required thing. */
export async function checkPermissions(client: KubeClient, checks: readonly Check[]): Promise<void> {
  const denied: string[] = [];
  await Promise.all(
    checks.map(async (c) => {
      const review = await createObject<{ status?: { allowed?: boolean } }>(client, CoreResources.selfSubjectAccessReview, undefined, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            verb: c.verb,
            group: c.group,
            resource: c.resource,
            ...(c.subresource === undefined ? {} : { subresource: c.subresource }),
            ...(c.name === undefined ? {} : { name: c.name }),
            ...(c.namespace === undefined ? {} : { namespace: c.namespace }),
          },
        },
      });
      if (review.status?.allowed !== true) denied.push(describeCheck(c));
    }),
  );
  if (denied.length > 0) {
    denied.sort();
    throw new PreflightError([
      `the operator's identity is missing permissions it needs: ${denied.join('; ')}. ` +
        `Grant them (chartpilot generate rbac writes a Role that does) and start again.`,
    ]);
  }
}
