// Acting as someone other than the test cluster's admin: a ServiceAccount's token (TokenRequest
// API, through `kubectl create token`) in a kubeconfig of its own.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { TestCluster } from './harness.js';

/** A short-lived token of ServiceAccount `namespace/name`, issued by the TokenRequest API. */
export async function serviceAccountToken(cluster: TestCluster, namespace: string, name: string): Promise<string> {
  return (await cluster.kubectl(['create', 'token', name, '-n', namespace, '--duration=1h'])).stdout.trim();
}

/** Writes dir/<file> (0600): a kubeconfig for `token` on the test cluster's server, with its CA. */
export function tokenKubeconfig(cluster: TestCluster, dir: string, token: string, file = 'operator.kubeconfig'): string {
  const admin = parse(readFileSync(cluster.kubeconfig, 'utf8')) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string } }[];
    clusters: { name: string; cluster: Record<string, unknown> }[];
  };
  const context = admin.contexts.find((c) => c.name === admin['current-context']);
  const entry = admin.clusters.find((c) => c.name === context?.context.cluster);
  assert.ok(entry, 'the test kubeconfig names its cluster');
  const path = join(dir, file);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: entry.cluster }],
      users: [{ name: 'token', user: { token } }],
      contexts: [{ name: 'token', context: { cluster: 'test', user: 'token' } }],
      'current-context': 'token',
    }),
    { mode: 0o600 },
  );
  return path;
}
