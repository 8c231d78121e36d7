/**
 * The operator's master seal key: 32 random bytes in a Secret of the operator's own namespace,
 * made at the first start and read at every start. Per-CR keys are derived from it (seal.ts), so
 * whoever reads it can forge records for every CR: only the operator may (RBAC: get and create on
 * Secrets in its namespace, nowhere a tenant has rights). Never logged.
 */
import { randomBytes } from 'node:crypto';
import { isAlreadyExists, isForbidden } from '../kube/errors.js';
import { CoreResources, createObject, findObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';

export const DEFAULT_SEAL_KEY_SECRET = 'chartpilot-seal-key';
/** The Secret's data key holding the master key. */
export const SEAL_KEY_FIELD = 'key';
const KEY_BYTES = 32;

/** The key cannot be had; the message names the Secret and the fix. */
export class SealKeyError extends Error {
  override readonly name = 'SealKeyError';
}

export interface SealKeyLocation {
  readonly namespace: string;
  readonly name: string;
}

/** Reads the master key, creating its Secret when there is none (a racing replica's wins). */
export async function loadSealKey(client: KubeClient, at: SealKeyLocation): Promise<{ key: Buffer; created: boolean }> {
  const existing = await read(client, at);
  if (existing !== undefined) return { key: existing, created: false };
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name: at.name, namespace: at.namespace, labels: { 'app.kubernetes.io/managed-by': 'chartpilot' } },
    data: { [SEAL_KEY_FIELD]: randomBytes(KEY_BYTES).toString('base64') },
  };
  try {
    await createObject(client, CoreResources.secret, at.namespace, body);
  } catch (err) {
    if (!isAlreadyExists(err)) throw explain(err, 'create', at);
  }
  // Read back what is stored: when another replica created it first, its key is the key.
  const stored = await read(client, at);
  if (stored === undefined) throw new SealKeyError(`Secret ${at.namespace}/${at.name} (the seal key) vanished right after it was created; start again`);
  return { key: stored, created: true };
}

async function read(client: KubeClient, at: SealKeyLocation): Promise<Buffer | undefined> {
  let secret;
  try {
    secret = await findObject(client, { resource: CoreResources.secret, namespace: at.namespace, name: at.name });
  } catch (err) {
    throw explain(err, 'get', at);
  }
  if (secret === undefined) return undefined;
  const data = isPlainObject(secret.data) ? secret.data[SEAL_KEY_FIELD] : undefined;
  const key = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.alloc(0);
  if (key.length < KEY_BYTES) {
    throw new SealKeyError(
      `Secret ${at.namespace}/${at.name} has no seal key (data.${SEAL_KEY_FIELD}: ${KEY_BYTES} random bytes): delete it and chartpilot makes a new one ` +
        '(releases sealed with a lost key then need `chartpilot adopt`), or point --seal-key-secret at another name',
    );
  }
  return key;
}

function explain(err: unknown, verb: 'get' | 'create', at: SealKeyLocation): Error {
  if (isForbidden(err)) {
    return new SealKeyError(
      `the operator may not ${verb} Secret ${at.namespace}/${at.name} (its seal key, which proves which Helm records it wrote): ` +
        `grant it get and create on secrets in namespace ${at.namespace} (a Role with apiGroups [""], resources [secrets], verbs [get, create]; ` +
        '`chartpilot generate rbac` writes it), or set --seal-key-secret / POD_NAMESPACE to where it may',
    );
  }
  return new SealKeyError(`cannot ${verb} Secret ${at.namespace}/${at.name} (the seal key): ${errorMessage(err)}`, { cause: err });
}
