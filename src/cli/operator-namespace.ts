/**
 * The operator's own namespace: where its seal key Secret is (whoever reads it can seal records
 * for every CR) and where chartPullSecret Secrets are read. Never guessed: in a pod it is the
 * pod's own; outside one, the user names it; otherwise start-up stops and says what to set. (It
 * used to fall back to `default`, a namespace tenants and tools often have rights in.)
 */
import { isDnsLabel } from '../config/labels.js';
import { readServiceAccountNamespace, SERVICE_ACCOUNT_NAMESPACE_FILE, type NamespaceFileReader } from '../controller/leader-election/config.js';

export type OperatorNamespaceResult = { ok: true; namespace: string; source: string } | { ok: false; problem: string };

/**
 * In a pod, the pod's namespace (its ServiceAccount's namespace file), whatever else is set: a
 * second replica must find the key the first made. Outside a pod POD_NAMESPACE, which stands in
 * for that file (as for the Lease and the Ansible runs), else `flag` (`run`'s
 * `--leader-election-namespace`, where the Lease is; '' when not given).
 */
export function resolveOperatorNamespace(
  flag: { readonly name: string; readonly value: string },
  env: Readonly<Record<string, string | undefined>>,
  readNamespaceFile: NamespaceFileReader = readServiceAccountNamespace,
): OperatorNamespaceResult {
  const fromFile = readNamespaceFile()?.trim();
  if (fromFile !== undefined && fromFile !== '') return { ok: true, namespace: fromFile, source: SERVICE_ACCOUNT_NAMESPACE_FILE };
  const fromEnv = env.POD_NAMESPACE?.trim();
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!isDnsLabel(fromEnv)) return { ok: false, problem: `POD_NAMESPACE is "${fromEnv}"; set it to the namespace the operator runs in (lower-case letters, digits and '-')` };
    return { ok: true, namespace: fromEnv, source: 'POD_NAMESPACE' };
  }
  if (flag.value !== '') return { ok: true, namespace: flag.value, source: flag.name };
  return {
    ok: false,
    problem:
      `the operator's namespace (where its seal key Secret is kept) is unknown: not in a pod (no ${SERVICE_ACCOUNT_NAMESPACE_FILE}) ` +
      `and neither POD_NAMESPACE nor ${flag.name} is set; set POD_NAMESPACE (or ${flag.name}) to the namespace the operator runs in, e.g. POD_NAMESPACE=chartpilot-system`,
  };
}
