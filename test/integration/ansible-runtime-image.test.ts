/**
 * The chartpilot-ansible image, built as `npm run image` builds it (cached by content, so an
 * unchanged tree builds nothing) and run as a pod would run it: read-only root, a tmpfs /tmp,
 * uid 65532, no capabilities, no network. Its runtime runs (ansible-runner, the kubernetes client,
 * both collections, a playbook through ansible-runner), the operator inside finds it at
 * /opt/chartpilot/ansible, and its compressed size stays within the 200 MB target.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { build } from 'esbuild';
import { execa } from 'execa';
import {
  buildAnsibleImage,
  containerEnv,
  ensureBaseImages,
  ensureContainerTools,
  packageVersion,
  writeArchive,
  type Built,
} from '../../devcluster/images.js';
import { repoRoot } from '../../devcluster/paths.js';
import { bundleOptions } from '../../scripts/bundler.js';

const work = mkdtempSync(join(tmpdir(), 'chartpilot-ansible-image-'));
after(() => { rmSync(work, { recursive: true, force: true }); });
const log = (line: string): void => { process.stderr.write(`[ansible image] ${line}\n`); };
const MAX_COMPRESSED_BYTES = 200e6;

let prepared: Promise<{ env: Record<string, string>; image: Built }> | undefined;
function prepare(): Promise<{ env: Record<string, string>; image: Built }> {
  prepared ??= (async () => {
    await ensureContainerTools(log);
    const env = await containerEnv();
    const bases = await ensureBaseImages(env, log);
    const { image } = await buildAnsibleImage(bases, env, log);
    log(`${image.tag}: ${image.built ? 'built' : 'unchanged'} in ${(image.ms / 1000).toFixed(1)} s`);
    return { env, image };
  })();
  return prepared;
}

/** `podman run` as a pod: read-only, tmpfs /tmp, uid 65532, no capabilities, no network. */
async function inPod(args: string[], opts: { entrypoint: string; mounts?: string[] }): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const { env, image } = await prepare();
  const r = await execa('podman', [
    'run', '--rm', '--network=none', '--read-only', '--tmpfs', '/tmp:rw,mode=1777,size=64m',
    '--user', '65532:65532', '--cap-drop=all', '--security-opt', 'no-new-privileges',
    ...(opts.mounts ?? []), '--entrypoint', opts.entrypoint, image.tag, ...args,
  ], { env, extendEnv: false, reject: false, stdin: 'ignore', timeout: 120_000 });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('the chartpilot-ansible image', { concurrency: false }, () => {
  it('builds (cached by content) and stays within 200 MB compressed', { timeout: 20 * 60_000 }, async (t) => {
    const { env, image } = await prepare();
    // The archive `npm run image` writes, as it writes it: skipped when it already holds this image.
    const file = join(repoRoot(), 'dist', 'image', `chartpilot-ansible-${packageVersion()}.tar`);
    const archive = await writeArchive([{ tag: image.tag, refName: `chartpilot-ansible:${packageVersion()}` }], file, env, log);
    const layers = archive.images[0]?.layers ?? [];
    const compressed = layers.reduce((n, l) => n + l.compressed, 0);
    const uncompressed = layers.reduce((n, l) => n + l.uncompressed, 0);
    t.diagnostic(`chartpilot-ansible: ${(compressed / 1e6).toFixed(1)} MB compressed, ${(uncompressed / 1e6).toFixed(1)} MB uncompressed, ${String(layers.length)} layers`);
    for (const l of layers) t.diagnostic(`  ${(l.compressed / 1e6).toFixed(1).padStart(6)} MB  ${l.createdBy.replace(/\s+/gu, ' ').slice(0, 90)}`);
    assert.ok(compressed > 0 && compressed <= MAX_COMPRESSED_BYTES, `compressed size ${String(compressed)} bytes (target ≤ ${String(MAX_COMPRESSED_BYTES)})`);
  });

  it('runs ansible-runner and the kubernetes client from the venv, with kubernetes.core and operator_sdk.util', async () => {
    const version = await inPod(['--version'], { entrypoint: 'ansible-runner' });
    assert.equal(version.exitCode, 0, version.stderr);
    assert.equal(version.stdout.trim(), '2.4.3');
    const py = await inPod(['-c', 'import sys, kubernetes, jsonpatch, ansible; print(sys.executable, kubernetes.__version__, ansible.__version__)'], { entrypoint: 'python' });
    assert.equal(py.exitCode, 0, py.stderr);
    assert.equal(py.stdout.trim(), '/opt/chartpilot/ansible/venv/bin/python 35.0.0 2.19.14');
    const doc = await inPod(['--json', 'operator_sdk.util.k8s_status', 'kubernetes.core.k8s'], { entrypoint: 'ansible-doc' });
    assert.equal(doc.exitCode, 0, doc.stderr);
    const docs = JSON.parse(doc.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(docs).sort(), ['kubernetes.core.k8s', 'operator_sdk.util.k8s_status']);
  });

  it('runs a playbook through ansible-runner on a read-only root as uid 65532', async () => {
    const dir = join(work, 'runner');
    mkdirSync(join(dir, 'project'), { recursive: true });
    mkdirSync(join(dir, 'inventory'), { recursive: true });
    writeFileSync(join(dir, 'inventory', 'hosts'), 'localhost ansible_connection=local ansible_python_interpreter=/opt/chartpilot/ansible/venv/bin/python\n');
    writeFileSync(join(dir, 'project', 'main.yml'), `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: a module of each collection loads
      kubernetes.core.k8s_info:
        kind: ConfigMap
        api_version: v1
      ignore_errors: true
    - name: requeue
      operator_sdk.util.requeue_after:
        time: 45s
`);
    // ansible-runner writes its artifacts into the private data dir: writable by 65532, like an emptyDir.
    for (const d of [dir, join(dir, 'project'), join(dir, 'inventory')]) chmodSync(d, 0o777);
    const r = await inPod(['run', '/runner', '-p', 'main.yml', '--ident', 'one'], { entrypoint: 'ansible-runner', mounts: ['-v', `${dir}:/runner:rw`] });
    assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
    const events = readdirSync(join(dir, 'artifacts', 'one', 'job_events')).map((f) =>
      JSON.parse(readFileSync(join(dir, 'artifacts', 'one', 'job_events', f), 'utf8')) as { event: string; event_data?: { task_action?: string; res?: { period?: string; msg?: string } } });
    const requeue = events.find((e) => e.event === 'runner_on_ok' && e.event_data?.task_action === 'operator_sdk.util.requeue_after');
    assert.equal(requeue?.event_data?.res?.period, '45s');
    // kubernetes.core's module loaded and ran, and failed only for want of a cluster (no kubeconfig, no service account).
    const info = events.find((e) => e.event_data?.task_action === 'kubernetes.core.k8s_info' && /^runner_on_(ok|failed)$/.test(e.event));
    assert.equal(info?.event, 'runner_on_failed');
    assert.match(info.event_data?.res?.msg ?? '', /^Could not create API client: Invalid kube-config file\. No configuration found\.$|Connection refused|Max retries/u);
  });

  it("the operator in the image finds the runtime at /opt/chartpilot/ansible without any variable", async () => {
    // The image has only the operator's bundle, which exports nothing: the lookup is bundled alone,
    // as the build bundles it, and mounted beside the operator's bundle, so it runs in the same
    // layout (its package root /opt/chartpilot) and the image's node.
    const probe = join(work, 'probe');
    await build({ ...bundleOptions(repoRoot(), 'find-runtime', 'dist/src/engines/ansible/runtime.js', false), outdir: probe, sourcemap: false, logLevel: 'error' });
    const r = await inPod(['--input-type=module', '-e', [
      "const { findAnsibleRuntime } = await import('/opt/chartpilot/dist/bundle/find-runtime.js');",
      'const rt = await findAnsibleRuntime(process.env);',
      'console.log(JSON.stringify({ source: rt.source, dir: rt.dir, python: rt.python, collections: rt.versions.collections }));',
    ].join('\n')], { entrypoint: 'node', mounts: ['-v', `${join(probe, 'find-runtime.js')}:/opt/chartpilot/dist/bundle/find-runtime.js:ro`] });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      source: 'image',
      dir: '/opt/chartpilot/ansible',
      python: '/opt/chartpilot/ansible/venv/bin/python',
      collections: { 'kubernetes.core': '6.2.0', 'operator_sdk.util': '0.5.0' },
    });
  });
});
