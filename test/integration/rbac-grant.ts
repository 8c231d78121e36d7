/**
 * An operator identity holding exactly what `chartpilot generate rbac` writes for a watches.yaml:
 * the RBAC applied, bound to a fresh ServiceAccount, and a kubeconfig acting as it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { clusterResolver, renderRbac } from '../../src/generate/render.js';
import type { TestKind } from './crd.js';
import { SAMPLE_CHART } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { serviceAccountToken, tokenKubeconfig } from './identity.js';
import { writeWatches } from './operator.js';

export interface Grant {
  /** The operator's directory, with the watches.yaml the RBAC was generated for. */
  readonly dir: string;
  /** Acting as the ServiceAccount that holds the grant. */
  readonly kubeconfig: string;
  /** The RBAC objects as applied. */
  readonly yaml: string;
  /** The operator's name: prefix of every object, and their app.kubernetes.io/name label. */
  readonly name: string;
  /** The operator's namespace (where its seal key is). */
  readonly namespace: string;
}

/**
 * Generates RBAC for `kind` (chart: the sample webapp unless given) bound to a fresh ServiceAccount in
 * `operatorNs`, applies it (after `edit`, if given) and returns a kubeconfig acting as that
 * ServiceAccount, on the same server with the same CA as the test cluster's.
 */
export async function grantGeneratedRbac(
  t: TestContext,
  cluster: TestCluster,
  kind: TestKind,
  operatorNs: string,
  roleNamespaces: readonly string[],
  edit: (docs: Record<string, unknown>[]) => void = () => undefined,
  tenants: { readonly defaultServiceAccount?: string; readonly tenantNamespaces?: readonly string[] } = {},
  chart: string = SAMPLE_CHART,
  /** More keys of the kind's watches entry (valuesFrom, dependsOn, …). */
  entry?: Record<string, unknown>,
): Promise<Grant> {
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-rbac-'));
  const watchesFile = writeWatches(dir, [{ kind, chart, ...(entry === undefined ? {} : { extra: entry }) }]);
  const name = `rbac-${randomBytes(4).toString('hex')}`;
  const resolver = await clusterResolver(false, cluster.kubeconfig, (line) => { t.diagnostic(line); });
  const out = await renderRbac(
    { watchesFile, name, namespace: operatorNs, serviceAccount: 'operator', roleNamespaces, sampleFiles: [], resolver, ...tenants },
    cluster.env,
  );
  assert.deepEqual(out.warnings, [], 'the sample chart needs no guesses');
  const docs = parseAllDocuments(out.yaml).map((d) => d.toJS() as Record<string, unknown>);
  edit(docs);
  const yaml = docs.map((d) => stringify(d)).join('---\n');
  t.after(async () => {
    // Cluster-scoped objects outlive the test namespaces.
    await cluster.kubectl(['delete', 'clusterrole,clusterrolebinding', '-l', `app.kubernetes.io/name=${name}`, '--ignore-not-found'], { allowFail: true });
  });
  await cluster.kubectl(['create', 'serviceaccount', 'operator', '-n', operatorNs]);
  await cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  return { dir, kubeconfig: tokenKubeconfig(cluster, dir, await serviceAccountToken(cluster, operatorNs, 'operator')), yaml, name, namespace: operatorNs };
}
