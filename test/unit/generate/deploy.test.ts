/** The operator's Deployment, samples, kustomization and the Dockerfile's invariants (test/integration/image.test.ts builds and runs it). */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { parseRunArgs } from '../../../src/cli/args.js';
import { MEMORY_NODE_OPTIONS, deployOptionProblems, kustomizationYaml, operatorYaml, sampleCrYaml } from '../../../src/generate/deploy.js';
import { METRICS_ARGS } from '../../../src/generate/metrics.js';
import { deployYaml } from '../../../src/generate/render.js';
import { REPO_ROOT } from './helpers.js';

interface Container {
  name: string;
  image: string;
  args: string[];
  env: { name: string; value: string }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: Record<string, unknown>;
  volumeMounts: { name: string; mountPath: string }[];
}

interface Deployment {
  kind: string;
  metadata: { name: string; namespace: string };
  spec: {
    replicas: number;
    template: {
      spec: {
        serviceAccountName: string;
        securityContext: Record<string, unknown>;
        containers: Container[];
        volumes: { name: string; emptyDir?: unknown }[];
      };
    };
  };
}

const OPTS = { name: 'op', namespace: 'op-system', serviceAccount: 'op-sa', image: 'registry.example.com/op:1.2.3' };

describe('operator Deployment', () => {
  const d = parse(operatorYaml(OPTS)) as Deployment;
  const pod = d.spec.template.spec;
  const c = pod.containers[0] as Container;

  it('runs one leader-elected replica as its ServiceAccount', () => {
    assert.equal(d.metadata.namespace, 'op-system');
    assert.equal(d.spec.replicas, 1);
    assert.equal(pod.serviceAccountName, 'op-sa');
    assert.equal(c.image, 'registry.example.com/op:1.2.3');
    // Flags only, as operator-sdk's scaffold: the image's ENTRYPOINT ends in `run`.
    assert.deepEqual(c.args.slice(0, 2), ['--watches-file=/opt/chartpilot/watches.yaml', '--leader-elect']);
  });

  it("has operator-sdk's scaffold metrics flags: HTTPS on :8443 with token and access reviews, probes on :8081", () => {
    // config/default/manager_metrics_patch.yaml and config/manager/manager.yaml of operator-sdk v1.42.
    for (const arg of ['--metrics-bind-address=:8443', '--metrics-secure', '--metrics-require-rbac', '--leader-elect', '--health-probe-bind-address=:8081']) {
      assert.ok(c.args.includes(arg), `${arg} in ${c.args.join(' ')}`);
    }
    assert.deepEqual(c.args.filter((a) => a.startsWith('--metrics-')), [...METRICS_ARGS]);
  });

  it('passes only flags and environment `chartpilot run` accepts', () => {
    assert.ok(c.args.every((a) => a.startsWith('--')), c.args.join(' '));
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    const parsed = parseRunArgs(c.args, env);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.problems.join('\n'));
    assert.equal(parsed.options.leaderElect, true);
    assert.equal(parsed.options.maxConcurrentReconciles, 2);
    assert.deepEqual(parsed.options.watchNamespaces, []);
    assert.deepEqual([parsed.options.metricsBindAddress?.host, parsed.options.metricsBindAddress?.port], [undefined, 8443]);
    assert.equal(parsed.options.metricsSecure, true);
    assert.equal(parsed.options.metricsRequireRbac, true);
  });

  it('is locked down: non-root 65532, no privilege escalation, read-only root, no capabilities, RuntimeDefault seccomp', () => {
    assert.deepEqual(pod.securityContext, { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    assert.deepEqual(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  });

  it('gives helm a writable /tmp for HOME and its cache, config and data', () => {
    assert.deepEqual(c.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    assert.ok(pod.volumes.some((v) => v.name === 'tmp' && v.emptyDir !== undefined));
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    assert.deepEqual(env, {
      WATCH_NAMESPACE: '',
      NODE_OPTIONS: MEMORY_NODE_OPTIONS,
      HOME: '/tmp',
      HELM_CACHE_HOME: '/tmp/helm/cache',
      HELM_CONFIG_HOME: '/tmp/helm/config',
      HELM_DATA_HOME: '/tmp/helm/data',
    });
    assert.match(operatorYaml(OPTS), /# Which namespaces to act in\. Empty: all namespaces/);
  });

  it('probes /healthz and /readyz on 8081, exposes metrics as https on 8443, and sets requests and a memory limit', () => {
    assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'health' });
    assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'health' });
    assert.deepEqual(c.ports.map((p) => [p.name, p.containerPort]), [['https', 8443], ['health', 8081]]);
    assert.deepEqual(c.resources, { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '384Mi' } });
  });

  it('comes with its Namespace, ServiceAccount, metrics objects and NetworkPolicy (generate deploy)', () => {
    const docs = parseAllDocuments(deployYaml(OPTS)).map((doc) => doc.toJS() as { kind: string; metadata: { name: string; namespace?: string } });
    assert.deepEqual(docs.map((x) => [x.kind, x.metadata.name, x.metadata.namespace]), [
      ['Namespace', 'op-system', undefined],
      ['ServiceAccount', 'op-sa', 'op-system'],
      ['Deployment', 'op', 'op-system'],
      ['Service', 'op-metrics-service', 'op-system'],
      ['ClusterRole', 'op-metrics-auth', undefined],
      ['ClusterRoleBinding', 'op-metrics-auth', undefined],
      ['ClusterRole', 'op-metrics-reader', undefined],
      ['NetworkPolicy', 'op-ingress', 'op-system'],
    ]);
  });

  it('refuses names Kubernetes would refuse', () => {
    assert.deepEqual(deployOptionProblems(OPTS), []);
    const problems = deployOptionProblems({ name: 'Op', namespace: 'op_system', serviceAccount: 'x'.repeat(64), image: 'a b' });
    assert.equal(problems.length, 4);
    // A Deployment may be called 9op, a Service may not.
    assert.deepEqual(deployOptionProblems({ name: '9op' }), ['--name "9op" must start with a letter: it names the metrics Service']);
  });
});

describe('sample CR', () => {
  it("is the chart's values.yaml, comments included", () => {
    const text = sampleCrYaml('demo.example.com/v1', 'WebApp', 'webapp-sample', '# How many pods.\nreplicaCount: 1\nimage:\n  tag: "1.27"  # pinned\n');
    const cr = parse(text) as { apiVersion: string; kind: string; metadata: { name: string }; spec: unknown };
    assert.deepEqual(cr, { apiVersion: 'demo.example.com/v1', kind: 'WebApp', metadata: { name: 'webapp-sample' }, spec: { replicaCount: 1, image: { tag: '1.27' } } });
    assert.match(text, /spec:\n {2}# How many pods\.\n {2}replicaCount: 1/);
    assert.match(text, /tag: "1\.27" # pinned/);
  });

  it('has an empty spec for a chart without values', () => {
    assert.deepEqual((parse(sampleCrYaml('x.io/v1', 'A', 'a-sample', '')) as { spec: unknown }).spec, {});
  });
});

describe('kustomization', () => {
  it('lists the resources for kubectl apply -k', () => {
    const k = parse(kustomizationYaml(['namespace.yaml', 'crds/a.yaml'])) as { kind: string; resources: string[] };
    assert.equal(k.kind, 'Kustomization');
    assert.deepEqual(k.resources, ['namespace.yaml', 'crds/a.yaml']);
  });
});

describe('Dockerfile (built for real by test/integration/image.test.ts)', () => {
  it('builds on Node 24, pins helm 4.1.4 (the host-built chartpilot-helm), and runs as 65532 from /opt/chartpilot', async () => {
    const text = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    // The official images stay the defaults; npm run image passes its own bases (devcluster/images.ts).
    assert.match(text, /^ARG NODE_IMAGE=node:24-bookworm-slim$/mu);
    assert.match(text, /^ARG DEBIAN_IMAGE=debian:bookworm-slim$/mu);
    assert.match(text, /^FROM --platform=linux\/amd64 \$\{NODE_IMAGE\} AS build$/mu);
    // The final stage is Debian plus the node binary: no npm, corepack or headers.
    assert.match(text, /^FROM --platform=linux\/amd64 \$\{DEBIAN_IMAGE\}$/mu);
    assert.match(text, /^COPY --from=build \/usr\/local\/bin\/node \/usr\/local\/bin\/node$/mu);
    // A proxy's CA reaches npm ci as a build secret, never a layer.
    assert.match(text, /RUN --mount=type=secret,id=ca,target=\/run\/secrets\/ca/);
    assert.match(text, /NODE_EXTRA_CA_CERTS=\/run\/secrets\/ca/);
    assert.match(text, /npm ci --ignore-scripts/);
    // npm run build's two steps: tsc, then the bundle, which is all the runtime stage takes of them.
    assert.match(text, /RUN node node_modules\/typescript\/bin\/tsc -p tsconfig\.json \\\n && node dist\/scripts\/bundle\.js \\\n/u);
    // helm is chartpilot-helm from the build context (scripts/image.ts places it), checked for version and worker mode.
    assert.match(text, /^COPY dist\/image\/chartpilot-helm \/out\/helm$/mu);
    assert.match(text, /= "v4\.1\.4"/);
    assert.match(text, /CHARTPILOT_HELM_WORKER=1 \/out\/helm \| grep -q '"ready":true'/);
    assert.match(text, /^COPY --from=build \/out\/helm \/usr\/local\/bin\/helm$/mu);
    assert.match(text, /^RUN ln -s helm \/usr\/local\/bin\/chartpilot-helm$/mu);
    assert.match(text, /^USER 65532:65532$/mu);
    assert.match(text, /^WORKDIR \/opt\/chartpilot$/mu);
    assert.match(text, /HELM_BIN=\/usr\/local\/bin\/helm/);
    // node, then the operator's V8 flags (test/unit/cli/node-flags.test.ts checks which), then the CLI.
    // ... and `run`, as helm-operator's ENTRYPOINT ends in `run`: a Deployment's args are only flags.
    assert.match(text, /^ENTRYPOINT \["node", (?:"--[a-z-]+(?:=\d+)?", )+"\/opt\/chartpilot\/bin\/chartpilot\.js", "run"\]$/mu);
    // curl carries the post-render to the operator's render server.
    assert.match(text, /apt-get install -y --no-install-recommends curl/);
    // No CMD: a Deployment's args (flags only, or an earlier `run, ...`) follow the ENTRYPOINT's `run`.
    assert.doesNotMatch(text, /^CMD /mu);
    // What the runtime stage copies from the build stage: the bundle carries every dependency, so
    // no node_modules, and without dist/src bin/chartpilot.js has nothing to fall back to.
    const copied = [...text.matchAll(/^COPY --from=build \/src\/(\S+)/gmu)].map((m) => m[1]);
    assert.deepEqual(copied, ['package.json', 'dist/bundle', 'bin']);
  });

  it('sends the builder only what the stages copy', async () => {
    const ignore = (await readFile(join(REPO_ROOT, '.dockerignore'), 'utf8')).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.deepEqual(ignore, ['*', '!package.json', '!package-lock.json', '!tsconfig.json', '!bin', '!src', '!scripts/bundle.ts', '!scripts/bundler.ts', '!scripts/ascii-source.ts', '!dist/image/chartpilot-helm', '!watches.yaml', '!charts']);
  });
});

describe('the Deployment for Ansible kinds', () => {
  it('sets ANSIBLE_GATHERING=explicit, more memory and a larger writable /tmp; the chart Deployment has none of it', () => {
    const o = { name: 'op', namespace: 'op-system', serviceAccount: 'op', image: 'op:1' };
    const ansible = operatorYaml({ ...o, ansible: true });
    const charts = operatorYaml(o);
    assert.match(ansible, /- name: ANSIBLE_GATHERING\n\s+value: explicit\n/u);
    assert.match(ansible, /limits:\n\s+memory: 768Mi/u);
    assert.match(ansible, /mountPath: \/tmp[\s\S]*emptyDir:\n\s+sizeLimit: 1Gi/u);
    assert.doesNotMatch(charts, /ANSIBLE/u);
    assert.match(charts, /limits:\n\s+memory: 384Mi/u);
    assert.match(charts, /sizeLimit: 256Mi/u);
  });
});

describe('sharded operator Deployment (generate deploy --shards)', () => {
  const d = parse(operatorYaml({ ...OPTS, shards: 3 })) as Deployment;
  const c = d.spec.template.spec.containers[0] as Container;
  const env = c.env as unknown as { name: string; valueFrom?: unknown }[];

  it('runs that many replicas with --shards, the ring named after the operator, each named by its pod', () => {
    assert.equal(d.spec.replicas, 3);
    const parsed = parseRunArgs(c.args.slice(1), {});
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.problems.join('\n'));
    assert.equal(parsed.options.shards, true);
    assert.equal(parsed.options.leaderElect, false);
    assert.equal(parsed.options.leaderElectionId, 'op');
    assert.deepEqual(env.find((e) => e.name === 'POD_NAME')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
  });

  it('comes with a Role for the ring\'s Leases in the operator namespace', () => {
    const docs = parseAllDocuments(deployYaml({ ...OPTS, shards: 3 })).map((x) => x.toJS() as { kind: string; metadata: { name: string; namespace?: string }; rules?: { resources: string[]; verbs: string[] }[] });
    const role = docs.find((x) => x.kind === 'Role' && x.metadata.name === 'op-shards');
    assert.equal(role?.metadata.namespace, 'op-system');
    assert.deepEqual(role.rules, [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }]);
    assert.ok(docs.some((x) => x.kind === 'RoleBinding' && x.metadata.name === 'op-shards'));
    // Without --shards there is no such Role, and one replica leads.
    assert.equal(parseAllDocuments(deployYaml(OPTS)).some((x) => (x.toJS() as { metadata?: { name?: string } }).metadata?.name === 'op-shards'), false);
  });
});

describe('the shard labels policy (generate deploy --shards)', () => {
  interface Doc {
    kind: string;
    metadata: { name: string };
    spec: {
      policyName?: string;
      validationActions?: string[];
      failurePolicy?: string;
      matchConstraints?: { resourceRules: { apiGroups: string[]; operations: string[]; resources: string[] }[] };
      matchConditions?: { name: string; expression: string }[];
      validations?: { expression: string; message: string }[];
    };
  }
  const docsOf = (yaml: string): Doc[] => parseAllDocuments(yaml).map((x) => x.toJS() as Doc);

  it('refuses, on the watched kinds, any change of the ring\'s two labels by anyone but the operator\'s ServiceAccount', () => {
    const docs = docsOf(deployYaml({ ...OPTS, shards: 3, shardKinds: [{ group: 'web.example.com', kind: 'WebApp' }, { group: 'db.example.com', kind: 'Db' }] }));
    const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy');
    assert.equal(policy?.metadata.name, 'op-shard-labels');
    assert.equal(policy.spec.failurePolicy, 'Fail');
    assert.deepEqual(policy.spec.matchConstraints?.resourceRules.map((r) => [r.apiGroups, r.operations]), [[['db.example.com', 'web.example.com'], ['CREATE', 'UPDATE']]]);
    const conditions = policy.spec.matchConditions ?? [];
    assert.equal(conditions.find((c) => c.name === 'not-the-operator')?.expression, "request.userInfo.username != 'system:serviceaccount:op-system:op-sa'");
    assert.match(conditions.find((c) => c.name === 'watched-kind')?.expression ?? '', /in \['db\.example\.com\/Db', 'web\.example\.com\/WebApp'\]/u);
    const rule = policy.spec.validations?.[0];
    // The ring is named after the operator (--leader-election-id=op): its labels, not other rings'.
    assert.match(rule?.expression ?? '', /'shard\.chartpilot\.io\/op' in variables\.labels/u);
    assert.match(rule?.expression ?? '', /'drain\.shard\.chartpilot\.io\/op' in variables\.oldLabels/u);
    assert.match(rule?.message ?? '', /only its ServiceAccount system:serviceaccount:op-system:op-sa may set, change or remove them/u);
    const binding = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
    assert.deepEqual([binding?.spec.policyName, binding?.spec.validationActions], ['op-shard-labels', ['Deny']]);
  });

  it('covers every kind when the watched kinds are not given, and is not written without --shards', () => {
    const policy = docsOf(deployYaml({ ...OPTS, shards: 2 })).find((d) => d.kind === 'ValidatingAdmissionPolicy');
    assert.deepEqual(policy?.spec.matchConstraints?.resourceRules[0]?.apiGroups, ['*']);
    assert.equal(policy.spec.matchConditions?.some((c) => c.name === 'watched-kind'), false);
    assert.equal(docsOf(deployYaml(OPTS)).some((d) => d.kind === 'ValidatingAdmissionPolicy'), false);
  });
});
