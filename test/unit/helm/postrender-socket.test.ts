// The socket transport: the installed plugin's own command line (curl, as helm would run it) posts a
// manifest to the operator's render server. Real curl, real unix socket; no helm needed here (the
// helm integration test runs both transports through real helm).
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { parse } from 'yaml';
import { injectMetadata } from '../../../src/helm/postrender/inject.js';
import { installPostRenderPlugin, POSTRENDER_PLUGIN_NAME, type InstalledPlugin } from '../../../src/helm/postrender/plugin.js';
import type { PostRenderSpec } from '../../../src/helm/types.js';

const SPEC: PostRenderSpec = {
  labels: { 'chartpilot.io/owner-uid': 'uid-1' },
  annotations: {},
  owner: {
    reference: { apiVersion: 'demo.chartpilot.io/v1alpha1', kind: 'WebApp', name: 'shop', uid: 'uid-1' },
    namespace: 'team-a',
    clusterScopedKinds: ['rbac.authorization.k8s.io/v1/ClusterRole'],
    namespacedKinds: ['v1/ConfigMap', 'apps/v1/Deployment'],
    nonOwnedAnnotations: {},
    allowClusterScoped: false,
    allowCrossNamespace: false,
  },
};
const MANIFEST = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-config
data:
  mode: "0755"
`;
const CLUSTER_ROLE = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: shop-reader
`;

async function socketPlugin(t: TestContext): Promise<InstalledPlugin> {
  const p = await installPostRenderPlugin({ curlBin: 'curl' });
  t.after(() => p.remove());
  assert.equal(p.transport, 'socket', 'curl is on PATH, so the socket transport is chosen');
  return p;
}

/** Runs the plugin the way helm 4 does: its command and args with ${VAR} expanded, plus our argument. */
async function runPlugin(p: InstalledPlugin, arg: string, stdin: string): Promise<{ exitCode: number | undefined; stdout: string }> {
  const yaml = parse(await readFile(join(p.pluginsDir, POSTRENDER_PLUGIN_NAME, 'plugin.yaml'), 'utf8')) as {
    runtimeConfig: { platformCommand: [{ command: string; args: string[] }] };
  };
  const expand = (s: string): string => s.replace(/\$\{(\w+)\}/g, (_, name: string) => p.env[name] ?? '');
  const [{ command, args }] = yaml.runtimeConfig.platformCommand;
  const r = await execa(expand(command), [...args.map(expand), arg], { input: stdin, reject: false });
  return { exitCode: r.exitCode, stdout: r.stdout };
}

describe('post-render socket transport', () => {
  it('the plugin posts the manifest and prints it with the owner metadata added', async (t) => {
    const p = await socketPlugin(t);
    assert.equal((await stat(p.env['CHARTPILOT_RENDER_SOCKET'] ?? '')).isSocket(), true);
    const render = p.prepare(SPEC, '/unused');
    const out = await runPlugin(p, render.arg, MANIFEST);
    assert.equal(out.exitCode, 0);
    assert.equal(`${out.stdout}\n`, injectMetadata(MANIFEST, SPEC));
    assert.equal(await render.refusal(), undefined);
    render.done();
  });

  it('a refusal fails the plugin and its message reaches the caller', async (t) => {
    const p = await socketPlugin(t);
    const render = p.prepare(SPEC, '/unused');
    const out = await runPlugin(p, render.arg, CLUSTER_ROLE);
    assert.notEqual(out.exitCode, 0);
    assert.equal(out.stdout, '', 'nothing for helm to apply');
    assert.match((await render.refusal())?.message ?? '', /ClusterRole shop-reader/);
    render.done();
  });

  it('an unknown or finished render is refused, so a stray call renders nothing', async (t) => {
    const p = await socketPlugin(t);
    const render = p.prepare(SPEC, '/unused');
    render.done();
    assert.notEqual((await runPlugin(p, render.arg, MANIFEST)).exitCode, 0);
    assert.notEqual((await runPlugin(p, 'http://chartpilot/render/not-an-id', MANIFEST)).exitCode, 0);
  });

  it('remove() stops the server and deletes the socket with the directory', async () => {
    const p = await installPostRenderPlugin({ curlBin: 'curl' });
    const socket = p.env['CHARTPILOT_RENDER_SOCKET'] ?? '';
    await p.remove();
    await assert.rejects(stat(socket), { code: 'ENOENT' });
  });
});
