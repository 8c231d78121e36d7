/**
 * "Switch by changing the image", as users do it: operator-sdk v1.42's own Dockerfiles with only
 * their FROM line changed to chartpilot's images, built with buildah, and run with podman as the
 * scaffolded Deployment runs its container — the Deployment's args appended to the image's
 * ENTRYPOINT (nothing added before them), only its ServiceAccount's token, its securityContext and
 * its resource limits (cpu 500m, memory 128Mi for helm, 768Mi for Ansible). Each reconciles the
 * memcached sample; the helm one also reports what its memory cgroup holds under 128Mi, and that
 * chartpilot warned at start that 128Mi is below what it needs (figures: docs/guides/from-operator-sdk.md).
 *
 * The Dockerfiles are operator-sdk's templates (internal/plugins/helm/v1/scaffolds/internal/
 * templates/dockerfile.go; ansible-operator-plugins' pkg/plugins/ansible/v1/scaffolds/internal/
 * templates/dockerfile.go), copied here verbatim but for FROM.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { stringify } from 'yaml';
import {
  buildAnsibleImage,
  buildImage,
  chartpilotSpec,
  containerEnv,
  ensureBaseImages,
  ensureContainerTools,
  packageVersion,
  placeWarmHelm,
} from '../../devcluster/images.js';
import { installCrd, testKind, type TestKind } from './crd.js';
import { condition, crsOf } from './crs.js';
import { applyYaml, newNamespace, testCluster } from './harness.js';
import { onScaffoldPorts, operatorSdkRbac, SCAFFOLD_ARGS, writeChart } from './operator-sdk-project.js';
import { containerMemory, memoryLine, podApiAccess, portFree, scaffoldPodFlags } from './pod-run.js';
import { waitFor } from './wait.js';

const cluster = await testCluster();
const LABEL = 'io.chartpilot.test=operator-sdk-image';
const work = mkdtempSync(join(tmpdir(), 'chartpilot-osdk-image-'));
const log = (line: string): void => { process.stderr.write(`[operator-sdk image] ${line}\n`); };
after(async () => {
  await execa('podman', ['rm', '-f', '--ignore', '--filter', `label=${LABEL}`], { reject: false, env: await containerEnv() });
  rmSync(work, { recursive: true, force: true });
});

/** operator-sdk's helm Dockerfile template, FROM changed. */
const helmDockerfile = (from: string): string => `# Build the manager binary
FROM ${from}

ENV HOME=/opt/helm
COPY watches.yaml \${HOME}/watches.yaml
COPY helm-charts  \${HOME}/helm-charts
WORKDIR \${HOME}
`;

/** ansible-operator-plugins' Dockerfile template, FROM changed. */
const ansibleDockerfile = (from: string): string => `FROM ${from}

COPY requirements.yml \${HOME}/requirements.yml
RUN ansible-galaxy collection install -r \${HOME}/requirements.yml \\
 && chmod -R ug+rwx \${HOME}/.ansible

COPY watches.yaml \${HOME}/watches.yaml
COPY roles/ \${HOME}/roles/
COPY playbooks/ \${HOME}/playbooks/
`;

interface Running {
  readonly name: string;
  readonly output: () => string;
  readonly exited: () => boolean;
  readonly stop: () => Promise<number | undefined>;
}

/**
 * The container as the kubelet would start it: `podman run <flags> <image> <Deployment args>`.
 * The scaffold's ports are fixed: the scaffold test's operator is kept off them while this runs
 * (onScaffoldPorts); should a process outside the suite hold one, the same flag is repeated with
 * a free port after the scaffold's args (the last one wins) and said so.
 */
function runPod(t: TestContext, image: string, flags: string[], args: readonly string[], env: Record<string, string>, opts: { ansible?: boolean } = {}): Promise<Running> {
  return onScaffoldPorts(t, async () => {
    const name = `osdk-image-${randomBytes(3).toString('hex')}`;
    const moved: string[] = [];
    for (const a of args) {
      const m = /^--(metrics-bind-address|health-probe-bind-address)=:(\d+)$/u.exec(a);
      if (m !== null && !(await portFree(Number(m[2])))) moved.push(`--${m[1] ?? ''}=:${String(await freeHighPort())}`);
    }
    // Ansible kinds: the runs' API proxy on 127.0.0.1:8888 by default, as ansible-operator's.
    if (opts.ansible === true && !(await portFree(8888))) moved.push(`--proxy-port=${String(await freeHighPort())}`);
    if (moved.length > 0) t.diagnostic(`scaffold ports taken on this machine; appended ${moved.join(' ')}`);
    const proc = execa('podman', ['run', '--rm', '--name', name, '--label', LABEL, ...flags, image, ...args, ...moved], { env, extendEnv: false, reject: false, all: true, stdin: 'ignore' });
    let output = '';
    let exited = false;
    proc.all.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    void proc.then(() => { exited = true; });
    t.after(async () => { await execa('podman', ['rm', '-f', '--ignore', name], { env, extendEnv: false, reject: false }); });
    return {
      name,
      output: () => output,
      exited: () => exited,
      stop: async () => {
        await execa('podman', ['kill', '--signal', 'TERM', name], { env, extendEnv: false, reject: false });
        const r = await Promise.race([proc, new Promise<undefined>((resolve) => setTimeout(() => { resolve(undefined); }, 10_000).unref())]);
        return r?.exitCode;
      },
    };
  });
}

async function freeHighPort(): Promise<number> {
  for (let p = 20_000 + Math.floor(Math.random() * 20_000); ; p++) if (await portFree(p)) return p;
}

/** The kind, its namespace with the controller-manager ServiceAccount, and operator-sdk's RBAC for it. */
async function project(t: TestContext, suffix: string, rbac: (kind: TestKind, ns: string, prefix: string) => Record<string, unknown>[]): Promise<{ kind: TestKind; ns: string }> {
  const kind = testKind(suffix);
  await installCrd(cluster, kind);
  const ns = await newNamespace(t, `${suffix.toLowerCase()}-system`);
  const prefix = `osdk-${randomBytes(4).toString('hex')}`;
  t.after(async () => {
    await cluster.kubectl(['delete', 'clusterrole,clusterrolebinding', '-l', `chartpilot-test=${prefix}`, '--ignore-not-found'], { allowFail: true });
  });
  await cluster.kubectl(['create', 'serviceaccount', 'controller-manager', '-n', ns]);
  await applyYaml(cluster, rbac(kind, ns, prefix).map((d) => stringify(d)).join('---\n'));
  return { kind, ns };
}

async function untilRunning(pod: Running, line: RegExp, what: string): Promise<void> {
  await waitFor(what, () => {
    if (pod.exited()) assert.fail(`the container exited\n--- container output ---\n${pod.output()}`);
    return Promise.resolve(line.test(pod.output()));
  }, { timeoutMs: 120_000, intervalMs: 200 });
}

describe("operator-sdk's Dockerfiles FROM chartpilot's images, run as their scaffolded Deployments", { concurrency: false }, () => {
  it('helm: builds, runs with the scaffold args under 128Mi, warns about the limit, reconciles the memcached sample', { timeout: 20 * 60_000 }, async (t) => {
    await ensureContainerTools(log);
    const env = await containerEnv();
    const bases = await ensureBaseImages(env, log);
    await placeWarmHelm(log);
    const base = await buildImage(chartpilotSpec(bases), env, log);
    // FROM the image by its ID: the tag is shared with other checkouts' builds on this machine.
    const dir = join(work, 'memcached-operator');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'Dockerfile'), helmDockerfile(base.id));
    const { kind, ns } = await project(t, 'OsdkImage', operatorSdkRbac);
    writeChart(dir);
    writeFileSync(join(dir, 'watches.yaml'), `# Use the 'create api' subcommand to add watches to this file.\n${stringify([{ group: kind.group, version: kind.version, kind: kind.kind, chart: 'helm-charts/memcached' }])}# +kubebuilder:scaffold:watch\n`);
    const app = await buildImage({ tag: `localhost/chartpilot-osdk-memcached:${packageVersion()}`, context: dir, dockerfile: 'Dockerfile', inputs: ['watches.yaml', 'helm-charts'], from: [base.id] }, env, log);
    t.diagnostic(`images: chartpilot ${base.built ? 'built' : 'unchanged'} in ${(base.ms / 1000).toFixed(1)} s, the operator-sdk project's ${app.built ? 'built' : 'unchanged'} in ${(app.ms / 1000).toFixed(1)} s`);

    const api = await podApiAccess(cluster, join(work, 'sa-helm'), ns, 'controller-manager');
    const started = Date.now();
    const pod = await runPod(t, app.id, scaffoldPodFlags(api, { cpu: '0.5', memory: '128m' }), SCAFFOLD_ARGS, env);
    await untilRunning(pod, /"msg":"controller started"/u, 'the controller started');
    t.diagnostic(`podman run to controller started: ${String(Date.now() - started)} ms`);
    // The watches file where operator-sdk's Dockerfile put it, its relative chart path from there.
    assert.match(pod.output(), /"chart":"\/opt\/helm\/helm-charts\/memcached"/u);
    // 128Mi is below the measured need: said once, at start, with the figures.
    assert.match(pod.output(), /"level":"warn"[^\n]*"limitMiB":128[^\n]*the container's memory limit \(128 MiB\) is below what chartpilot needs/u);

    const cr = crsOf(cluster, kind, ns);
    // operator-sdk's sample CR: the chart's values as its spec.
    await cr.apply('memcached-sample', { replicaCount: 1, image: 'memcached:1.6.38', port: 11211 });
    const deployed = await cr.deployed('memcached-sample');
    assert.equal(condition(deployed, 'Deployed')?.reason, 'InstallSuccessful');
    await cr.until('memcached-sample', 'Ready', (c) => condition(c, 'Ready')?.status === 'True');
    for (let i = 1; i <= 4; i++) await cr.apply(`memcached-${String(i)}`, { replicaCount: 1 });
    for (let i = 1; i <= 4; i++) await cr.deployed(`memcached-${String(i)}`);
    const memory = await containerMemory(pod.name, env);
    t.diagnostic(`5 CRs, 128Mi: ${memoryLine(memory)}`);
    assert.equal(memory.limitMiB, 128);
    assert.equal(memory.oomKills, 0, memoryLine(memory));

    await cr.delete('memcached-sample');
    await cr.gone('memcached-sample');
    assert.doesNotMatch(pod.output(), /forbidden|cannot list|"level":"error"/iu, 'nothing refused to the scaffolded identity, no error');
    assert.equal(await pod.stop(), 0, pod.output());
  });

  it('ansible: builds (ansible-galaxy in the Dockerfile included), runs with the scaffold args, reconciles the memcached sample', { timeout: 30 * 60_000 }, async (t) => {
    await ensureContainerTools(log);
    const env = await containerEnv();
    const bases = await ensureBaseImages(env, log);
    const { image } = await buildAnsibleImage(bases, env, log);
    const dir = join(work, 'memcached-ansible-operator');
    const { kind, ns } = await project(t, 'OsdkAnsible', (k, n, prefix) => operatorSdkRbac(k, n, prefix));
    mkdirSync(join(dir, 'roles', 'memcached', 'tasks'), { recursive: true });
    mkdirSync(join(dir, 'roles', 'memcached', 'defaults'), { recursive: true });
    mkdirSync(join(dir, 'playbooks'), { recursive: true });
    writeFileSync(join(dir, 'Dockerfile'), ansibleDockerfile(image.id));
    // The scaffold's requirements.yml names Galaxy's kubernetes.core 3.2.0, cloud.common and
    // community.docker; no Galaxy is reachable here, so it names what the image has (the same
    // ansible-galaxy run, which then finds everything installed).
    writeFileSync(join(dir, 'requirements.yml'), '---\ncollections:\n  - name: operator_sdk.util\n    version: "0.5.0"\n  - name: kubernetes.core\n    version: ">=3.2.0"\n');
    writeFileSync(join(dir, 'watches.yaml'), `---\n# Use the 'create api' subcommand to add watches to this file.\n- version: ${kind.version}\n  group: ${kind.group}\n  kind: ${kind.kind}\n  playbook: playbooks/memcached.yml\n# +kubebuilder:scaffold:watch\n`);
    writeFileSync(join(dir, 'playbooks', 'memcached.yml'), '---\n- hosts: localhost\n  gather_facts: no\n  collections:\n    - kubernetes.core\n    - operator_sdk.util\n  tasks:\n    - import_role:\n        name: "memcached"\n');
    writeFileSync(join(dir, 'roles', 'memcached', 'defaults', 'main.yml'), '---\nsize: 1\n');
    // operator-sdk's Ansible tutorial role.
    writeFileSync(join(dir, 'roles', 'memcached', 'tasks', 'main.yml'), `---
- name: start memcached
  kubernetes.core.k8s:
    definition:
      kind: Deployment
      apiVersion: apps/v1
      metadata:
        name: '{{ ansible_operator_meta.name }}-memcached'
        namespace: '{{ ansible_operator_meta.namespace }}'
      spec:
        replicas: "{{size}}"
        selector:
          matchLabels:
            app: memcached
        template:
          metadata:
            labels:
              app: memcached
          spec:
            containers:
            - name: memcached
              command:
              - memcached
              - -m=64
              - -o
              - modern
              - -v
              image: "docker.io/memcached:1.4.36-alpine"
              ports:
                - containerPort: 11211
`);
    const app = await buildImage({ tag: `localhost/chartpilot-osdk-memcached-ansible:${packageVersion()}`, context: dir, dockerfile: 'Dockerfile', inputs: ['requirements.yml', 'watches.yaml', 'roles', 'playbooks'], from: [image.id] }, env, log);
    t.diagnostic(`images: chartpilot-ansible ${image.built ? 'built' : 'unchanged'} in ${(image.ms / 1000).toFixed(1)} s, the ansible-operator project's ${app.built ? 'built' : 'unchanged'} in ${(app.ms / 1000).toFixed(1)} s`);

    const api = await podApiAccess(cluster, join(work, 'sa-ansible'), ns, 'controller-manager');
    // ansible-operator's scaffold: config/manager/manager.yaml and config/default's metrics patch.
    const args = ['--metrics-require-rbac', '--metrics-secure', '--metrics-bind-address=:8443', '--leader-elect', `--leader-election-id=${kind.kind.toLowerCase()}-operator`, '--health-probe-bind-address=:6789'];
    const pod = await runPod(t, app.id, [...scaffoldPodFlags(api, { cpu: '0.5', memory: '768m' }), '-e', 'ANSIBLE_GATHERING=explicit'], args, env, { ansible: true });
    await untilRunning(pod, /"msg":"controller started"/u, 'the controller started');
    const cr = crsOf(cluster, kind, ns);
    await cr.apply('memcached-sample', { size: 1 });
    await waitFor('the role made the Deployment', async () =>
      (await cluster.kubectl(['get', 'deployment', 'memcached-sample-memcached', '-n', ns, '-o', 'jsonpath={.spec.replicas}'], { allowFail: true })).stdout === '1', { timeoutMs: 180_000 })
      .catch((err: unknown) => assert.fail(`${String(err)}\n--- the operator's last lines ---\n${pod.output().split('\n').slice(-6).join('\n')}`));
    await cr.until('memcached-sample', 'Successful', (c) => condition(c, 'Successful')?.status === 'True', 180_000);
    const memory = await containerMemory(pod.name, env);
    t.diagnostic(`1 CR, 768Mi: ${memoryLine(memory)}`);
    assert.equal(memory.oomKills, 0);
    assert.doesNotMatch(pod.output(), /forbidden|"level":"error"/iu);
    assert.equal(await pod.stop(), 0, pod.output());
  });
});
