/**
 * An operator-sdk v1.42 helm project as `operator-sdk init --plugins helm` and `create api` leave
 * it: the scaffolded Deployment's args, a memcached chart, and the RBAC operator-sdk generates for
 * it. Shared by the test that runs chartpilot with those args (operator-sdk-scaffold.test.ts) and
 * the one that builds the project's own Dockerfile FROM chartpilot's image (operator-sdk-image.test.ts).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestKind } from './crd.js';

/** The scaffolded manager Deployment's args (operator-sdk v1.42, config/default rendered by kustomize). */
export const SCAFFOLD_ARGS = [
  '--metrics-require-rbac',
  '--metrics-secure',
  '--metrics-bind-address=:8443',
  '--leader-elect',
  '--leader-election-id=memcached-operator',
  '--health-probe-bind-address=:8081',
];
export const METRICS_PORT = 8443;

/** Held by the test process whose operator has the scaffold's fixed ports (:8443, :8081). */
const PORTS_LOCK = join(tmpdir(), 'chartpilot-test-scaffold-ports.lock');
let portsHeldBy: TestContext | undefined;

/**
 * Runs `start` (which starts an operator on the scaffold's fixed ports) once no other test process
 * has an operator there, and keeps the ports for the rest of `t`: the scaffold test and the image
 * test run their operators with the scaffold's own args, as users do, and under the suite's
 * concurrency they met on :8443 (the second one exited "address already in use"). The release is
 * registered after `start`, so it runs after the operator's own clean-up (t.after runs in order).
 * A lock left by a process that is gone is taken over.
 */
export async function onScaffoldPorts<T>(t: TestContext, start: () => Promise<T>): Promise<T> {
  if (portsHeldBy === t) return start();
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(PORTS_LOCK);
      writeFileSync(join(PORTS_LOCK, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'EEXIST') throw err;
      if (!lockHolderAlive()) {
        rmSync(PORTS_LOCK, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another test process has held ${PORTS_LOCK} for 10 minutes`);
      await sleep(250);
    }
  }
  portsHeldBy = t;
  try {
    return await start();
  } finally {
    t.after(() => {
      portsHeldBy = undefined;
      rmSync(PORTS_LOCK, { recursive: true, force: true });
    });
  }
}

function lockHolderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(PORTS_LOCK, 'pid'), 'utf8'));
  } catch {
    return true; // being written: the holder is between mkdir and writeFile
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: unknown }).code === 'EPERM';
  }
}

/** A memcached chart, as `operator-sdk init --plugins helm` users bring one. */
export function writeChart(dir: string): string {
  const chart = join(dir, 'helm-charts', 'memcached');
  mkdirSync(join(chart, 'templates'), { recursive: true });
  writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: memcached\nversion: 0.1.0\nappVersion: "1.6.38"\n');
  writeFileSync(join(chart, 'values.yaml'), 'replicaCount: 1\nimage: memcached:1.6.38\nport: 11211\n');
  writeFileSync(
    join(chart, 'templates', 'deployment.yaml'),
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-memcached
  labels: {app.kubernetes.io/name: memcached, app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app.kubernetes.io/name: memcached, app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: memcached, app.kubernetes.io/instance: {{ .Release.Name }}}
    spec:
      containers:
        - name: memcached
          image: {{ .Values.image }}
          ports: [{containerPort: {{ .Values.port }}, name: memcached}]
`,
  );
  writeFileSync(
    join(chart, 'templates', 'service.yaml'),
    `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-memcached
spec:
  selector: {app.kubernetes.io/name: memcached, app.kubernetes.io/instance: {{ .Release.Name }}}
  ports: [{port: {{ .Values.port }}, targetPort: memcached, name: memcached}]
`,
  );
  return chart;
}

const ALL = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

/**
 * What operator-sdk writes to config/rbac for this chart and kind (role.yaml with its base rules and
 * the rules found by rendering the chart, leader_election_role.yaml, metrics_auth_role.yaml,
 * metrics_reader_role.yaml and their bindings), with cluster-scoped names made unique per test.
 */
export function operatorSdkRbac(kind: TestKind, ns: string, prefix: string): Record<string, unknown>[] {
  const subject = [{ kind: 'ServiceAccount', name: 'controller-manager', namespace: ns }];
  const meta = (name: string, namespaced = false): Record<string, unknown> => ({ name, ...(namespaced ? { namespace: ns } : {}), labels: { 'chartpilot-test': prefix } });
  const roleRef = (kindName: string, name: string): Record<string, string> => ({ apiGroup: 'rbac.authorization.k8s.io', kind: kindName, name });
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(`${prefix}-manager-role`),
      rules: [
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['*'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        { apiGroups: [kind.group], resources: [kind.plural, `${kind.plural}/status`, `${kind.plural}/finalizers`], verbs: ALL },
        { apiGroups: [''], resources: ['pods', 'services', 'services/finalizers', 'endpoints', 'persistentvolumeclaims', 'events', 'configmaps', 'secrets'], verbs: ALL },
        { apiGroups: ['apps'], resources: ['deployments', 'daemonsets', 'replicasets', 'statefulsets'], verbs: ALL },
      ],
    },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(`${prefix}-manager-rolebinding`), roleRef: roleRef('ClusterRole', `${prefix}-manager-role`), subjects: subject },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta('leader-election-role', true),
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta('leader-election-rolebinding', true), roleRef: roleRef('Role', 'leader-election-role'), subjects: subject },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(`${prefix}-metrics-auth-role`),
      rules: [
        { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
        { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
      ],
    },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(`${prefix}-metrics-auth-rolebinding`), roleRef: roleRef('ClusterRole', `${prefix}-metrics-auth-role`), subjects: subject },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(`${prefix}-metrics-reader`), rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
  ];
}
