/**
 * The shipped image, built and run for real: the chartpilot base image from the Dockerfile and an
 * application image scaffolded by `chartpilot new`, both built with buildah (cached by content,
 * so an unchanged tree builds nothing), then the application image run with podman as a pod
 * would run it: no kubeconfig, only KUBERNETES_SERVICE_HOST/PORT and a ServiceAccount token, CA
 * and namespace under /var/run/secrets/kubernetes.io/serviceaccount/, the token minted with the
 * TokenRequest API for the ServiceAccount the scaffold's deploy/ creates and bound only by its
 * RBAC; read-only root, a tmpfs /tmp, uid 65532, no capabilities.
 *
 * The container shares the host's network (the control plane listens on 127.0.0.1), so the
 * operator's metrics and probe ports are free loopback ports passed by flag.
 * Without buildah/podman (and no way to install them) these tests fail, naming the package.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execa } from 'execa';
import {
  applicationSpec,
  buildImage,
  chartpilotSpec,
  placeWarmHelm,
  containerEnv,
  ensureBaseImages,
  ensureContainerTools,
  packageVersion,
} from '../../devcluster/images.js';
import { BIN, SAMPLE_CHART } from './fixtures.js';
import { getJson, newNamespace, testCluster } from './harness.js';
import { serviceAccountToken } from './identity.js';
import { scrapeHttps } from './scrape.js';
import { waitFor } from './wait.js';
import { freePort } from '../../devcluster/ports.js';

const cluster = await testCluster();
/** The scaffolded operator: namespace imagetest-system, ServiceAccount imagetest, ClusterRole imagetest-manager. */
const NAME = 'imagetest';
const OPERATOR_NS = `${NAME}-system`;
const GROUP = 'image.chartpilot.io';
const CRD = `webapps.${GROUP}`;
const APP_IMAGE = `localhost/chartpilot-${NAME}:${packageVersion()}`;
/** The pod's terminationGracePeriodSeconds in deploy/operator.yaml. */
const GRACE_MS = 30_000;

const work = mkdtempSync(join(tmpdir(), 'chartpilot-image-test-'));
const scaffold = join(work, 'app');
after(async () => {
  await execa('podman', ['rm', '-f', '--ignore', '--filter', `label=io.chartpilot.test=${NAME}`], { reject: false, env: await containerEnv() });
  await cluster.kubectl(['delete', 'crd', CRD, '--ignore-not-found', '--wait=false'], { allowFail: true });
  for (const f of ['operator-metrics.yaml', 'rbac.yaml', 'namespace.yaml']) {
    await cluster.kubectl(['delete', '-f', join(scaffold, 'deploy', f), '--ignore-not-found', '--wait=false'], { allowFail: true });
  }
  rmSync(work, { recursive: true, force: true });
});

const log = (line: string): void => { process.stderr.write(`[image] ${line}\n`); };

interface Prepared {
  env: Record<string, string>;
  /** The chartpilot base image (the Dockerfile's), as built. */
  baseTag: string;
  /** The API server as a pod sees it (KUBERNETES_SERVICE_HOST/PORT). */
  host: string;
  port: string;
  /** A service-account dir holding a valid token, the cluster CA and the namespace. */
  saDir: string;
}

let prepared: Promise<Prepared> | undefined;

/** Builds both images and installs the scaffold's namespace, ServiceAccount, RBAC and metrics objects (not its CRD). */
function prepare(): Promise<Prepared> {
  prepared ??= (async () => {
    const started = Date.now();
    await ensureContainerTools(log);
    const env = await containerEnv();
    const bases = await ensureBaseImages(env, log);
    await placeWarmHelm(log);
    const base = await buildImage(chartpilotSpec(bases), env, log);
    log(`${base.tag}: ${base.built ? 'built' : 'unchanged'} in ${(base.ms / 1000).toFixed(1)} s`);

    // The application repository exactly as a user gets it.
    const made = await execa(process.execPath, [BIN, 'new', scaffold, '--chart', SAMPLE_CHART, '--group', GROUP, '--version', 'v1alpha1', '--kind', 'WebApp', '--name', NAME], {
      env: cluster.env,
      reject: false,
    });
    assert.equal(made.exitCode, 0, made.stderr);
    const app = await buildImage(applicationSpec(APP_IMAGE, scaffold, base.tag), env, log);
    log(`${app.tag}: ${app.built ? 'built' : 'unchanged'} in ${(app.ms / 1000).toFixed(1)} s (both images ready after ${((Date.now() - started) / 1000).toFixed(1)} s)`);

    // A CRD left by an earlier run against a long-lived cluster would hide the missing-CRD case.
    await cluster.kubectl(['delete', 'crd', CRD, '--ignore-not-found', '--wait=true'], { allowFail: true });
    // operator-metrics.yaml too: operator.yaml runs --metrics-require-rbac, which needs its metrics-auth role.
    for (const f of ['namespace.yaml', 'service-account.yaml', 'rbac.yaml', 'operator-metrics.yaml']) await cluster.kubectl(['apply', '-f', join(scaffold, 'deploy', f)]);

    const config = await getJson<{ clusters: { cluster: { server: string; 'certificate-authority-data'?: string; 'certificate-authority'?: string } }[] }>(cluster, [
      'config', 'view', '--raw', '--minify',
    ]);
    const c = config.clusters[0]?.cluster;
    assert.ok(c !== undefined, 'the kubeconfig names a cluster');
    const server = new URL(c.server);
    const ca = c['certificate-authority-data'] !== undefined
      ? Buffer.from(c['certificate-authority-data'], 'base64')
      : readFileSync(c['certificate-authority'] ?? '');
    // The TokenRequest API, as the kubelet does for a projected service-account token.
    const token = (await cluster.kubectl(['create', 'token', NAME, '-n', OPERATOR_NS, '--duration=1h'])).stdout.trim();
    const saDir = serviceAccountDir('sa', { token, ca, namespace: OPERATOR_NS });
    return { env, baseTag: base.tag, host: server.hostname, port: server.port || '443', saDir };
  })();
  return prepared;
}

function serviceAccountDir(name: string, files: { token: string; ca: Buffer; namespace: string }): string {
  const dir = join(work, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(join(dir, 'token'), files.token);
  writeFileSync(join(dir, 'ca.crt'), files.ca);
  writeFileSync(join(dir, 'namespace'), files.namespace);
  // The container runs as 65532: the files must be readable by it, as a projected volume's are.
  chmodSync(dir, 0o755);
  for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o644);
  return dir;
}

interface PodOptions {
  saDir: string;
  /** WATCH_NAMESPACE */
  watchNamespace?: string;
  /** Extra podman run flags (mounts). */
  podman?: string[];
  /** Arguments after the image: a Deployment's args, appended to the ENTRYPOINT (`chartpilot run`). */
  args?: string[];
}

/** `podman run` of the application image as a pod would run it. */
function podArgs(p: Prepared, name: string, o: PodOptions): string[] {
  return [
    'run', '--rm', '--name', name, '--label', `io.chartpilot.test=${NAME}`,
    '--network=host',
    '--read-only', '--tmpfs', '/tmp:rw,mode=1777,size=64m',
    '--user', '65532:65532', '--cap-drop=all', '--security-opt', 'no-new-privileges',
    '-e', `KUBERNETES_SERVICE_HOST=${p.host}`, '-e', `KUBERNETES_SERVICE_PORT=${p.port}`,
    ...(o.watchNamespace === undefined ? [] : ['-e', `WATCH_NAMESPACE=${o.watchNamespace}`]),
    '-v', `${o.saDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
    ...(o.podman ?? []),
    APP_IMAGE,
    ...(o.args ?? []),
  ];
}

/** Runs a container that is expected to stop by itself; returns its exit code and output. */
async function runToExit(p: Prepared, o: PodOptions): Promise<{ exitCode: number; stderr: string; stdout: string }> {
  const name = `${NAME}-${randomBytes(3).toString('hex')}`;
  // No watches file named: the operator finds the image's /opt/chartpilot/watches.yaml by itself.
  // Free ports: with the host's network the default :8080 may be taken by another test's process
  // (OLM's operators bind it), which would decide the exit instead.
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const args = o.args ?? [`--metrics-bind-address=127.0.0.1:${String(metricsPort)}`, `--health-probe-bind-address=127.0.0.1:${String(healthPort)}`];
  const r = await execa('podman', podArgs(p, name, { ...o, args }), { env: p.env, extendEnv: false, reject: false, timeout: 90_000, stdin: 'ignore' });
  return { exitCode: r.exitCode ?? -1, stderr: r.stderr, stdout: r.stdout };
}

/** stderr lines that are not podman's own or JSON logs. */
const errorLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));

describe('the shipped image', { concurrency: false }, () => {
  it('builds the base image and the scaffolded application image (cached by content)', { timeout: 20 * 60_000 }, async () => {
    const p = await prepare();
    const inspect = await execa('podman', ['image', 'inspect', APP_IMAGE], { env: p.env, extendEnv: false });
    const [image] = JSON.parse(inspect.stdout) as { Config: { User: string; Entrypoint: string[]; Cmd?: string[] | null } }[];
    assert.equal(image?.Config.User, '65532:65532');
    // `chartpilot run`, as helm-operator's ENTRYPOINT ends in `run`: a Deployment's args are flags only.
    assert.deepEqual(image.Config.Entrypoint.slice(-2), ['/opt/chartpilot/bin/chartpilot.js', 'run']);
    assert.ok(image.Config.Cmd === undefined || image.Config.Cmd === null || image.Config.Cmd.length === 0, JSON.stringify(image.Config.Cmd));
    // The scaffold's files are in the image where its watches.yaml says.
    const ls = await execa('podman', ['run', '--rm', '--network=none', '--entrypoint', 'ls', APP_IMAGE, '/opt/chartpilot', '/opt/chartpilot/charts'], { env: p.env, extendEnv: false });
    assert.match(ls.stdout, /watches\.yaml/);
    assert.match(ls.stdout, /webapp/);
    // chartpilot's code is the bundle alone: no node_modules, and no dist/src to fall back to.
    const code = await execa('podman', ['run', '--rm', '--network=none', '--entrypoint', 'ls', APP_IMAGE, '-A', '/opt/chartpilot', '/opt/chartpilot/dist'], { env: p.env, extendEnv: false });
    assert.doesNotMatch(code.stdout, /node_modules/);
    assert.match(code.stdout, /^\/opt\/chartpilot\/dist:\nbundle$/mu);
  });

  it('the base image is at most 110 MB compressed (gzip layers, as a registry stores and a node pulls them)', async (t) => {
    const p = await prepare();
    const layout = join(work, 'oci-size');
    await execa('skopeo', ['copy', '--quiet', '--dest-compress', '--dest-compress-format', 'gzip', `containers-storage:${p.baseTag}`, `oci:${layout}:size`], { env: p.env, extendEnv: false });
    const blob = (digest: string): string => join(layout, 'blobs', ...digest.split(':'));
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
    const manifest = JSON.parse(readFileSync(blob(index.manifests[0]?.digest ?? ''), 'utf8')) as { config: { size: number }; layers: { size: number; mediaType: string }[] };
    assert.ok(manifest.layers.length > 0 && manifest.layers.every((l) => l.mediaType.endsWith('+gzip')), JSON.stringify(manifest.layers));
    const bytes = manifest.config.size + manifest.layers.reduce((sum, l) => sum + l.size, 0);
    t.diagnostic(`${p.baseTag}: ${(bytes / 1e6).toFixed(1)} MB compressed in ${String(manifest.layers.length)} layers`);
    assert.ok(bytes <= 110e6, `${p.baseTag} is ${(bytes / 1e6).toFixed(1)} MB compressed; issue #30 allows 110 MB: look at what the Dockerfile's layers add (podman history ${p.baseTag})`);
  });

  it('exits 2 with one line when the watches file does not parse', async (t) => {
    const p = await prepare();
    const bad = join(work, 'bad-watches.yaml');
    writeFileSync(bad, '- group: [image.chartpilot.io\n  kind: WebApp\n');
    chmodSync(bad, 0o644);
    // As a Deployment written for the image's earlier `run` CMD passes them: `run` first still works.
    const [metricsPort, healthPort] = [await freePort(), await freePort()];
    const r = await runToExit(p, {
      saDir: p.saDir,
      podman: ['-v', `${bad}:/opt/chartpilot/watches.yaml:ro`],
      args: ['run', '--watches-file=/opt/chartpilot/watches.yaml', `--metrics-bind-address=127.0.0.1:${String(metricsPort)}`, `--health-probe-bind-address=127.0.0.1:${String(healthPort)}`],
    });
    assert.equal(r.exitCode, 2, r.stderr);
    const lines = errorLines(r.stderr);
    t.diagnostic(`exit ${String(r.exitCode)}: ${lines.join(' | ')}`);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', /watches/);
  });

  it('exits 3 with one line when the CRD is missing', async (t) => {
    const p = await prepare();
    const r = await runToExit(p, { saDir: p.saDir });
    assert.equal(r.exitCode, 3, r.stderr);
    const lines = errorLines(r.stderr);
    t.diagnostic(`exit ${String(r.exitCode)}: ${lines.join(' | ')}`);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', new RegExp(`no CustomResourceDefinition for kind WebApp in ${GROUP.replace(/\./g, '\\.')}/v1alpha1`));
  });

  it('exits 3 with one line when the token is wrong', async (t) => {
    const p = await prepare();
    await cluster.kubectl(['apply', '-f', join(scaffold, 'deploy', 'crds')]);
    await waitFor(`CRD ${CRD} established`, async () =>
      (await cluster.kubectl(['get', 'crd', CRD, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'], { allowFail: true })).stdout === 'True');
    const wrong = serviceAccountDir('sa-wrong', {
      token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJub2JvZHkifQ.bm90LWEtc2lnbmF0dXJl',
      ca: readFileSync(join(p.saDir, 'ca.crt')),
      namespace: OPERATOR_NS,
    });
    const r = await runToExit(p, { saDir: wrong });
    assert.equal(r.exitCode, 3, r.stderr);
    const lines = errorLines(r.stderr);
    t.diagnostic(`exit ${String(r.exitCode)}: ${lines.join(' | ')}`);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', /^error: the Kubernetes API server at https:\/\/[^ ]+ rejected the credentials \(401 Unauthorized\): check the pod's service account token/);
  });

  it('runs as a pod would: Ready sample CR, /metrics and /readyz, read-only, uid 65532, no capabilities, exit 0 on SIGTERM', async (t) => {
    const p = await prepare();
    await cluster.kubectl(['apply', '-f', join(scaffold, 'deploy', 'crds')]);
    const ns = await newNamespace(t, 'image');
    const [metricsPort, healthPort] = [await freePort(), await freePort()];
    const name = `${NAME}-${randomBytes(3).toString('hex')}`;
    const started = Date.now();
    const proc = execa('podman', podArgs(p, name, {
      saDir: p.saDir,
      watchNamespace: ns,
      args: [
        // As deploy/operator.yaml runs it (flags only); the Lease goes to the namespace of the mounted service account.
        '--watches-file=/opt/chartpilot/watches.yaml',
        `--metrics-bind-address=127.0.0.1:${String(metricsPort)}`, `--health-probe-bind-address=127.0.0.1:${String(healthPort)}`,
        '--metrics-secure', '--metrics-require-rbac',
        '--leader-elect', `--leader-election-id=${name}`,
      ],
    }), { env: p.env, extendEnv: false, reject: false, all: true, stdin: 'ignore' });
    t.after(async () => { await execa('podman', ['rm', '-f', '--ignore', name], { env: p.env, extendEnv: false, reject: false }); });
    let output = '';
    proc.all.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const fail = (why: string): never => assert.fail(`${why}\n--- container output ---\n${output}`);
    let exited = false;
    void proc.then(() => { exited = true; });

    await waitFor('/readyz answers 200', async () => {
      if (exited) fail('the container exited');
      return (await fetch(`http://127.0.0.1:${String(healthPort)}/readyz`)).status === 200;
    }, { timeoutMs: 60_000, intervalMs: 100 });
    t.diagnostic(`podman run to /readyz: ${String(Date.now() - started)} ms`);

    const samples = join(scaffold, 'deploy', 'samples');
    await cluster.kubectl(['apply', '-n', ns, '-f', join(samples, readdirSync(samples)[0] ?? '')]);
    await waitFor('the sample WebApp Ready', async () => {
      const list = await getJson<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(cluster, ['get', `webapps.${GROUP}`, '-n', ns]);
      return list.items.length === 1 && list.items[0]?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    }, { timeoutMs: 120_000 });

    // Scraped as Prometheus would be, with a token bound to the scaffold's metrics-reader role.
    assert.equal((await scrapeHttps(metricsPort)).status, 401, 'no token, no metrics');
    const reader = `reader-${randomBytes(3).toString('hex')}`;
    await cluster.kubectl(['create', 'serviceaccount', reader, '-n', ns]);
    await cluster.kubectl(['create', 'clusterrolebinding', reader, `--clusterrole=${NAME}-metrics-reader`, `--serviceaccount=${ns}:${reader}`]);
    t.after(async () => { await cluster.kubectl(['delete', 'clusterrolebinding', reader, '--ignore-not-found'], { allowFail: true }); });
    const token = await serviceAccountToken(cluster, ns, reader);
    const scraped = await waitFor('a scrape with the reader token answered 200', async () => {
      const s = await scrapeHttps(metricsPort, token);
      return s.status === 200 ? s : undefined;
    }, { timeoutMs: 30_000 });
    const metrics = scraped.body;
    assert.match(metrics, /^controller_runtime_reconcile_total\{controller="webapp",result="(success|requeue_after)"\} [1-9]/mu);
    assert.match(metrics, /^helm_operator_build_info\{commit="[^"]*",version="[^"]+"\} 1$/mu);
    assert.match(metrics, /^chartpilot_helm_calls_total\{action="upgrade",outcome="success",error_kind=""\} [1-9]/mu);
    // The image's one helm is chartpilot-helm, running its engine.
    assert.match(output, /"mode":"engine"[^\n]*"msg":"helm found"|"msg":"helm found"[^\n]*"mode":"engine"/u, output);
    assert.match(output, /"msg":"helm engine started"/u);
    assert.match(metrics, /^leader_election_master_status\{name="[^"]+"\} 1$/mu);

    // What the kernel says about the operator process (PID 1 of the container).
    const status = (await execa('podman', ['exec', name, 'cat', '/proc/1/status'], { env: p.env, extendEnv: false })).stdout;
    assert.match(status, /^Uid:\s+65532\s+65532\s+65532\s+65532$/mu);
    assert.match(status, /^Gid:\s+65532\s+65532\s+65532\s+65532$/mu);
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.match(status, new RegExp(`^${set}:\\s+0{16}$`, 'mu'), `${set} is empty`);
    assert.match(status, /^NoNewPrivs:\s+1$/mu);
    const write = await execa('podman', ['exec', name, 'touch', '/opt/chartpilot/x'], { env: p.env, extendEnv: false, reject: false });
    assert.notEqual(write.exitCode, 0);
    assert.match(write.stderr, /Read-only file system/);
    // No kubeconfig anywhere: the operator found the cluster through the service account alone.
    const env = (await execa('podman', ['exec', name, 'cat', '/proc/1/environ'], { env: p.env, extendEnv: false })).stdout.split('\0');
    assert.ok(!env.some((e) => e.startsWith('KUBECONFIG=')), env.join(' '));

    const stopping = Date.now();
    await execa('podman', ['kill', '--signal', 'TERM', name], { env: p.env, extendEnv: false });
    const result = await Promise.race([proc, new Promise<undefined>((resolve) => setTimeout(() => { resolve(undefined); }, GRACE_MS).unref())]);
    if (result === undefined) fail(`still running ${String(GRACE_MS / 1000)} s after SIGTERM`);
    t.diagnostic(`SIGTERM to exit: ${String(Date.now() - stopping)} ms`);
    assert.equal(result?.exitCode, 0, output);
  });
});
