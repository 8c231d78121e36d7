/** chartPullSecret Secrets, read with the operator's own identity (the only kube access of this layer). */
import { findObject, CoreResources } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { KubeObject } from '../kube/types.js';
import type { SecretData } from './credentials.js';
import type { SecretReader } from './resolver.js';

export function kubeSecretReader(client: KubeClient): SecretReader {
  return async (namespace, name) => {
    const s = await findObject<KubeObject & SecretData>(client, { resource: CoreResources.secret, namespace, name }, { timeoutMs: 15_000 });
    return s === undefined ? undefined : { type: s.type, data: s.data };
  };
}
