/**
 * Which Lease leader election uses and who this process is: the lease name when none is given,
 * the namespace when none is given (the pod's own), and a per-process identity.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { gvkKey, type GroupVersionKind } from '../../config/types.js';

/** `--leader-election-id` and `--leader-election-namespace`; '' = derive / detect. */
export interface LeaderElectionSettings {
  readonly id: string;
  readonly namespace: string;
}

/** The Lease leader election runs on. */
export interface LeaseLocation {
  readonly name: string;
  readonly namespace: string;
}

export type LeaseLocationResult = { ok: true; lease: LeaseLocation } | { ok: false; problem: string };

/** Reads the pod's namespace; undefined outside a pod. */
export type NamespaceFileReader = () => string | undefined;

/** client-go's identity: host name (the pod name in a pod) plus a random suffix, unique per process. */
export function newIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

/**
 * The lease name when none is given: stable for a given set of watched kinds (so every replica
 * of one Deployment agrees on it without configuration) and different for operators that watch
 * different kinds (so two operators in one namespace never block each other).
 */
export function defaultLeaseName(kinds: readonly GroupVersionKind[]): string {
  const keys = kinds.map((k) => gvkKey(k)).sort();
  return `chartpilot-${createHash('sha256').update(keys.join('\n')).digest('hex').slice(0, 10)}`;
}

export const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The pod's namespace from its ServiceAccount mount; undefined outside a pod. */
export const readServiceAccountNamespace: NamespaceFileReader = () => {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE_FILE, 'utf8');
  } catch {
    return undefined;
  }
};

export type LeaseNamespaceResult = { ok: true; namespace: string; source: string } | { ok: false; problem: string };

/** `--leader-election-namespace`, else the pod's namespace (service account file), else POD_NAMESPACE. */
export function resolveLeaseNamespace(
  flag: string,
  env: Readonly<Record<string, string | undefined>>,
  readNamespaceFile: NamespaceFileReader = readServiceAccountNamespace,
): LeaseNamespaceResult {
  if (flag !== '') return { ok: true, namespace: flag, source: '--leader-election-namespace' };
  const fromFile = readNamespaceFile()?.trim();
  if (fromFile !== undefined && fromFile !== '') return { ok: true, namespace: fromFile, source: SERVICE_ACCOUNT_NAMESPACE_FILE };
  const fromEnv = env.POD_NAMESPACE?.trim();
  if (fromEnv !== undefined && fromEnv !== '') return { ok: true, namespace: fromEnv, source: 'POD_NAMESPACE' };
  return {
    ok: false,
    problem:
      '--leader-elect needs a namespace for its Lease and none was found: not running in a pod ' +
      `(${SERVICE_ACCOUNT_NAMESPACE_FILE} is missing) and POD_NAMESPACE is unset; set --leader-election-namespace`,
  };
}

/** The Lease for `settings`: the given name or one derived from the watched kinds, in the given or detected namespace. */
export function resolveLeaseLocation(
  settings: LeaderElectionSettings,
  kinds: readonly GroupVersionKind[],
  env: Readonly<Record<string, string | undefined>>,
  readNamespaceFile: NamespaceFileReader = readServiceAccountNamespace,
): LeaseLocationResult {
  const ns = resolveLeaseNamespace(settings.namespace, env, readNamespaceFile);
  if (!ns.ok) return ns;
  return { ok: true, lease: { name: settings.id === '' ? defaultLeaseName(kinds) : settings.id, namespace: ns.namespace } };
}
