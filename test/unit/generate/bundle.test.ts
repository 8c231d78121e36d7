/** The OLM bundle: the CSV model (pure), OperatorHub metadata, the catalog model, and `generate bundle`/`catalog` as a user runs them. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { defaultBinDir } from '../../../devcluster/paths.js';
import { buildCsv, isSemver, olmDeploymentSpec, ownedCrds, specDescriptors, splitRbac, type KubeObject } from '../../../src/generate/bundle-csv.js';
import { hubMetadata, iconMediaType, minKubeVersionOf, parseMaintainer, readIcon } from '../../../src/generate/bundle-meta.js';
import { bundleOptionProblems } from '../../../src/generate/bundle.js';
import { buildCatalog, compareSemver, type LoadedBundle } from '../../../src/generate/catalog.js';
import { generateCommand } from '../../../src/generate/cli.js';
import { captureIo, tempTree } from './helpers.js';

const chart = (chartYaml: string): { source: string; files: Map<string, Uint8Array> } => ({ source: 'c', files: new Map([['Chart.yaml', new TextEncoder().encode(chartYaml)]]) });

const binding = (kind: string, name: string, roleKind: string, sa: string): KubeObject => ({
  kind,
  metadata: { name },
  roleRef: { kind: roleKind, name },
  subjects: [{ kind: 'ServiceAccount', name: sa, namespace: 'ops' }],
});

describe('bundle CSV model', () => {
  it('splits RBAC: Roles bound to the operator become permissions, ClusterRoles clusterPermissions, unbound roles stay objects without namespace', () => {
    const split = splitRbac(
      [
        { kind: 'Role', metadata: { name: 'm', namespace: 'ops' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] },
        binding('RoleBinding', 'm', 'Role', 'op'),
        { kind: 'ClusterRole', metadata: { name: 'auth' }, rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }] },
        binding('ClusterRoleBinding', 'auth', 'ClusterRole', 'op'),
        { kind: 'ClusterRole', metadata: { name: 'reader' }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
        { kind: 'Role', metadata: { name: 'other', namespace: 'ops' }, rules: [] },
        binding('RoleBinding', 'other', 'Role', 'someone-else'),
      ],
      'op',
    );
    assert.deepEqual(split.permissions, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]);
    assert.deepEqual(split.clusterPermissions, [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }]);
    assert.deepEqual(split.objects.map((o) => [o['kind'], o['metadata']]), [['ClusterRole', { name: 'reader' }], ['Role', { name: 'other' }]]);
  });

  it('takes WATCH_NAMESPACE from olm.targetNamespaces and leaves the rest of the Deployment as generated', () => {
    const deployment = {
      spec: { template: { spec: { containers: [{ name: 'manager', env: [{ name: 'WATCH_NAMESPACE', value: '' }, { name: 'HOME', value: '/tmp' }] }] } } },
    };
    const spec = olmDeploymentSpec(deployment);
    assert.deepEqual((spec as { template: { spec: { containers: { env: unknown[] }[] } } }).template.spec.containers[0]?.env, [
      { name: 'WATCH_NAMESPACE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['olm.targetNamespaces']" } } },
      { name: 'HOME', value: '/tmp' },
    ]);
    // The input is not modified: the same Deployment still serves generate deploy.
    assert.deepEqual(deployment.spec.template.spec.containers[0]?.env[0], { name: 'WATCH_NAMESPACE', value: '' });
  });

  it('describes spec fields that values.schema.json describes, nested, in stable order', () => {
    const d = specDescriptors({
      properties: {
        replicaCount: { type: 'integer', description: 'How many.' },
        image: { type: 'object', properties: { tag: { type: 'string', description: 'The tag.' }, plain: { type: 'string' } } },
        'bad key': { description: 'skipped: not a path' },
      },
    });
    assert.deepEqual(d, [
      { path: 'image.tag', displayName: 'Tag', description: 'The tag.' },
      { path: 'replicaCount', displayName: 'Replica Count', description: 'How many.' },
    ]);
  });

  it('owns each served version of each CRD', () => {
    const crd = {
      metadata: { name: 'apps.example.com' },
      spec: { names: { kind: 'App' }, versions: [{ name: 'v1', served: true }, { name: 'v1beta1', served: true }, { name: 'v0', served: false }] },
    };
    assert.deepEqual(
      ownedCrds([crd], (k) => `about ${k}`).map((o) => [o.name, o.version, o.kind, o.description]),
      [['apps.example.com', 'v1', 'App', 'about App'], ['apps.example.com', 'v1beta1', 'App', 'about App']],
    );
  });

  it('builds a CSV with all install modes, replaces, skipRange, and createdAt only when asked', () => {
    const input = {
      packageName: 'app-operator',
      version: '0.2.0',
      image: 'img:1',
      deploymentName: 'app-operator',
      deployment: { metadata: { labels: { a: 'b' } }, spec: { template: { spec: { containers: [] } } } },
      serviceAccount: 'op',
      rbac: { permissions: [{ verbs: ['get'] }], clusterPermissions: [], objects: [] },
      crds: [],
      describeKind: (k: string): string => k,
      samples: [{ kind: 'App' }],
      hub: { displayName: 'App', description: 'd', provider: 'p', keywords: ['k'], maintainers: [], links: [], icon: undefined, minKubeVersion: '1.27.0' },
      namespace: 'ops',
      builder: 'chartpilot-v1',
    };
    const csv = buildCsv({ ...input, replaces: 'app-operator.v0.1.0', skipRange: '<0.2.0' });
    const spec = csv['spec'] as Record<string, unknown>;
    const annotations = (csv['metadata'] as { annotations: Record<string, string> }).annotations;
    assert.equal((csv['metadata'] as { name: string }).name, 'app-operator.v0.2.0');
    assert.equal(spec['replaces'], 'app-operator.v0.1.0');
    assert.equal(annotations['olm.skipRange'], '<0.2.0');
    assert.equal(annotations['createdAt'], undefined);
    assert.deepEqual(JSON.parse(annotations['alm-examples'] ?? ''), [{ kind: 'App' }]);
    assert.deepEqual((spec['installModes'] as { type: string }[]).map((m) => m.type).sort(), ['AllNamespaces', 'MultiNamespace', 'OwnNamespace', 'SingleNamespace']);
    const install = (spec['install'] as { spec: Record<string, unknown> }).spec;
    assert.deepEqual(install['permissions'], [{ serviceAccountName: 'op', rules: [{ verbs: ['get'] }] }]);
    assert.equal(install['clusterPermissions'], undefined);
    const stamped = buildCsv({ ...input, createdAt: '2026-01-01T00:00:00Z' });
    assert.equal((stamped['metadata'] as { annotations: Record<string, string> }).annotations['createdAt'], '2026-01-01T00:00:00Z');
  });

  it('knows semver when it sees it', () => {
    for (const v of ['0.1.0', '1.2.3-rc.1', '1.0.0+build.5']) assert.ok(isSemver(v), v);
    for (const v of ['1.0', 'v1.0.0', '01.0.0', '1.0.0-', 'latest']) assert.ok(!isSemver(v), v);
  });

  it('refuses bad bundle flags with one line each naming the fix', () => {
    const ok = { version: '0.1.0', packageName: 'app', channels: ['alpha'] };
    assert.deepEqual(bundleOptionProblems(ok), []);
    assert.match(bundleOptionProblems({ ...ok, version: '1.0' }).join('\n'), /--version "1.0" is not a semantic version such as 0.1.0/);
    assert.match(bundleOptionProblems({ ...ok, defaultChannel: 'stable' }).join('\n'), /--default-channel "stable" is not one of --channels \(alpha\)/);
    assert.match(bundleOptionProblems({ ...ok, packageName: 'App_Op' }).join('\n'), /--package "App_Op" must be a lower-case DNS label/);
    assert.match(bundleOptionProblems({ ...ok, replaces: 'yesterday' }).join('\n'), /--replaces "yesterday" must name the bundle/);
    assert.match(bundleOptionProblems({ ...ok, createdAt: 'soon' }).join('\n'), /--created-at "soon" is not a date/);
  });
});

describe('OperatorHub metadata', () => {
  it('takes Chart.yaml fields, lets flags override them, and warns for each missing field naming the flag', () => {
    const full = hubMetadata(
      'app-operator',
      chart('name: app\ndescription: An app\nkeywords: [web]\nhome: https://example.com\nmaintainers: [{name: Jane, email: jane@example.com}]\nkubeVersion: ">=1.27.0-0"\n'),
      { icon: { base64data: 'x', mediatype: 'image/png' } },
    );
    assert.deepEqual(full.warnings, []);
    assert.equal(full.metadata.displayName, 'App Operator');
    assert.equal(full.metadata.provider, 'Jane');
    assert.equal(full.metadata.minKubeVersion, '1.27.0');
    assert.deepEqual(full.metadata.links, [{ name: 'Home', url: 'https://example.com' }]);

    const overridden = hubMetadata('a', chart('name: app\ndescription: An app\n'), { description: 'Other', maintainers: ['Bob <bob@example.com>'], keywords: ['x'] });
    assert.equal(overridden.metadata.description, 'Other');
    assert.deepEqual(overridden.metadata.maintainers, [{ name: 'Bob', email: 'bob@example.com' }]);

    const bare = hubMetadata('a', chart('name: app\nicon: https://example.com/i.png\n'), {});
    const text = bare.warnings.join('\n');
    assert.match(text, /no description .*--description or description in Chart.yaml/);
    assert.match(text, /no maintainers .*--maintainer "Name <email>"/);
    assert.match(text, /no provider .*--provider/);
    assert.match(text, /no keywords .*--keyword/);
    assert.match(text, /no icon: Chart.yaml names https:\/\/example.com\/i.png, .*--icon <file>/);
    assert.match(text, /no minKubeVersion .*--min-kube-version/);
    assert.match(hubMetadata('a', chart('name: app\n'), { maintainers: ['nobody'] }).problems.join('\n'), /--maintainer "nobody" is not "Name <email>"/);
  });

  it('reads kubeVersion lower bounds and maintainers', () => {
    assert.equal(minKubeVersionOf('>= 1.25 < 1.35'), '1.25.0');
    assert.equal(minKubeVersionOf('<1.30.0'), undefined);
    assert.deepEqual(parseMaintainer('Jane Doe <jane@example.com>'), { name: 'Jane Doe', email: 'jane@example.com' });
  });

  it('accepts an icon by its content, and refuses a file that is not an image', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]);
    assert.equal(iconMediaType(png), 'image/png');
    assert.equal(iconMediaType(Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>')), 'image/svg+xml');
    assert.equal(iconMediaType(Buffer.from('hello')), undefined);
    const dir = await tempTree('icon', { 'icon.png': 'not a png at all\n' });
    await assert.rejects(readIcon(join(dir, 'icon.png')), (err: Error & { problems?: string[] }) => {
      assert.match(err.problems?.join('\n') ?? '', /--icon .*icon.png is not an image although its name says image\/png: give a PNG, SVG, JPEG or GIF file/);
      return true;
    });
    await writeFile(join(dir, 'real.png'), png);
    assert.deepEqual(await readIcon(join(dir, 'real.png')), { base64data: png.toString('base64'), mediatype: 'image/png' });
  });
});

function loaded(version: string, opts: { replaces?: string; skipRange?: string; channels?: string[]; pkg?: string } = {}): LoadedBundle {
  const csv = {
    kind: 'ClusterServiceVersion',
    metadata: { name: `app.v${version}`, annotations: opts.skipRange === undefined ? {} : { 'olm.skipRange': opts.skipRange } },
    spec: { version, ...(opts.replaces === undefined ? {} : { replaces: opts.replaces }) },
  };
  const crd = { kind: 'CustomResourceDefinition', spec: { group: 'example.com', names: { kind: 'App' }, versions: [{ name: 'v1' }] } };
  return { dir: `/b/${version}`, packageName: opts.pkg ?? 'app', channels: opts.channels ?? ['alpha'], defaultChannel: 'alpha', csv, objects: [csv, crd] };
}

describe('catalog model', () => {
  it('orders semver with pre-releases before releases', () => {
    const sorted = ['0.10.0', '0.2.0', '0.2.0-rc.1', '0.2.0-alpha', '1.0.0'].sort(compareSemver);
    assert.deepEqual(sorted, ['0.2.0-alpha', '0.2.0-rc.1', '0.2.0', '0.10.0', '1.0.0']);
  });

  it('writes a package, a channel with replaces and skipRange in version order, and bundles with their objects inline', () => {
    const { documents } = buildCatalog([loaded('0.2.0', { replaces: 'app.v0.1.0', skipRange: '<0.2.0' }), loaded('0.1.0')], { bundleImage: 'reg/app-bundle:v{version}' });
    assert.deepEqual(documents[0], { schema: 'olm.package', name: 'app', defaultChannel: 'alpha' });
    assert.deepEqual(documents[1], {
      schema: 'olm.channel',
      package: 'app',
      name: 'alpha',
      entries: [{ name: 'app.v0.1.0' }, { name: 'app.v0.2.0', replaces: 'app.v0.1.0', skipRange: '<0.2.0' }],
    });
    const bundle = documents[3] as { name: string; image: string; properties: { type: string; value: Record<string, unknown> }[] };
    assert.equal(bundle.name, 'app.v0.2.0');
    assert.equal(bundle.image, 'reg/app-bundle:v0.2.0');
    assert.deepEqual(bundle.properties.filter((p) => p.type !== 'olm.bundle.object'), [
      { type: 'olm.gvk', value: { group: 'example.com', kind: 'App', version: 'v1' } },
      { type: 'olm.package', value: { packageName: 'app', version: '0.2.0' } },
    ]);
    assert.deepEqual((documents[3] as { relatedImages: unknown }).relatedImages, [{ name: '', image: 'reg/app-bundle:v0.2.0' }]);
    const inline = bundle.properties.filter((p) => p.type === 'olm.bundle.object').map((p) => JSON.parse(Buffer.from(String(p.value['data']), 'base64').toString()) as KubeObject);
    assert.deepEqual(inline.map((o) => o['kind']), ['ClusterServiceVersion', 'CustomResourceDefinition']);
  });

  it('refuses bundles of several packages, a missing replaced bundle, and a default channel without bundles', () => {
    assert.throws(() => buildCatalog([loaded('0.1.0'), loaded('0.2.0', { pkg: 'other' })], {}), /not one package/);
    assert.throws(() => buildCatalog([loaded('0.2.0', { replaces: 'app.v0.1.0' })], {}), /replaces app.v0.1.0, which is not among the bundles given/);
    assert.throws(() => buildCatalog([loaded('0.1.0')], { defaultChannel: 'stable' }), /default channel "stable" has no bundle/);
  });
});

describe('chartpilot generate bundle / catalog', () => {
  async function project(chartYaml = 'apiVersion: v2\nname: app\nversion: 0.1.0\ndescription: An app\n'): Promise<string> {
    return tempTree('bundle', {
      'watches.yaml': '- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n',
      'charts/app/Chart.yaml': chartYaml,
      'charts/app/values.yaml': 'size: 1\n',
      'charts/app/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
    });
  }

  it('documents both commands in --help', async () => {
    for (const what of ['bundle', 'catalog']) {
      const io = captureIo();
      assert.equal(await generateCommand([what, '--help'], io), 0);
      assert.match(io.out(), new RegExp(`^Usage: chartpilot generate ${what}`, 'u'));
    }
    const list = captureIo();
    assert.equal(await generateCommand(['--help'], list), 0);
    assert.match(list.out(), /^ {2}bundle {3}an Operator Lifecycle Manager bundle/mu);
  });

  it('refuses a watches file with no kinds, and a version that is not semver, with exit 2', async () => {
    const empty = await tempTree('bundle-empty', { 'watches.yaml': '[]\n' });
    const io = captureIo();
    assert.equal(await generateCommand(['bundle', '--version', '0.1.0', '--offline', '--watches-file', join(empty, 'watches.yaml'), '--output-dir', empty], io), 2);
    assert.match(io.err(), /^error: .*watches.yaml has no entries; add one per custom resource kind/mu);
    const dir = await project();
    const bad = captureIo();
    assert.equal(await generateCommand(['bundle', '--version', 'v1', '--offline', '--watches-file', join(dir, 'watches.yaml'), '--output-dir', dir], bad), 2);
    assert.equal(bad.err(), 'error: --version "v1" is not a semantic version such as 0.1.0 (OLM orders bundles by it)');
    const missing = captureIo();
    assert.equal(await generateCommand(['bundle', '--offline'], missing), 2);
    assert.match(missing.err(), /--version is required/);
  });

  it('writes a stable bundle and a catalog over it (needs helm: skipped without it)', async (t) => {
    // The provisioned helm (npm test provisions it; .ci/run too), else one on PATH.
    const provisioned = join(defaultBinDir(), 'helm');
    const helm = process.env['HELM_BIN'] ?? (existsSync(provisioned) ? provisioned : 'helm');
    const env = { ...process.env, HELM_BIN: helm };
    const dir = await project();
    const args = ['bundle', '--version', '0.1.0', '--offline', '--watches-file', join(dir, 'watches.yaml'), '--output-dir', join(dir, 'out'), '--package', 'app-operator'];
    const io = captureIo(env);
    const code = await generateCommand(args, io);
    if (code === 3) {
      t.skip(`helm cannot run here: ${io.err()}`);
      return;
    }
    assert.equal(code, 0, io.err());
    assert.match(io.err(), /warning: the bundle has no maintainers/);
    assert.match(io.err(), /warning: the CSV runs the default image chartpilot:\S+, .*--image/u);
    const csvFile = join(dir, 'out/bundle/manifests/app-operator.clusterserviceversion.yaml');
    const first = await readFile(csvFile, 'utf8');
    assert.equal(await generateCommand(args, captureIo(env)), 0);
    assert.equal(await readFile(csvFile, 'utf8'), first, 'the same input gives the same bytes');
    const csv = parse(first) as { metadata: { name: string }; spec: { customresourcedefinitions: { owned: { name: string }[] } } };
    assert.equal(csv.metadata.name, 'app-operator.v0.1.0');
    assert.deepEqual(csv.spec.customresourcedefinitions.owned.map((o) => o.name), ['apps.apps.example.com']);
    assert.match(await readFile(join(dir, 'out/bundle.Dockerfile'), 'utf8'), /^FROM scratch$/mu);

    // Without --with-service-monitor no ServiceMonitor (OLM would fail the install without its CRD); with it, one.
    const manifests = async (): Promise<string[]> => (await readdir(join(dir, 'out/bundle/manifests'))).sort();
    assert.deepEqual((await manifests()).filter((f) => f.includes('servicemonitor')), []);
    const withMonitor = join(dir, 'monitored');
    assert.equal(await generateCommand([...args.slice(0, -4), '--output-dir', withMonitor, '--package', 'app-operator', '--with-service-monitor', '--created-at', '2026-01-01T00:00:00Z'], captureIo(env)), 0);
    const monitored = await readdir(join(withMonitor, 'bundle/manifests'));
    assert.ok(monitored.includes('chartpilot-metrics-monitor_monitoring.coreos.com_v1_servicemonitor.yaml'), monitored.join(', '));
    assert.match(await readFile(join(withMonitor, 'bundle/manifests/app-operator.clusterserviceversion.yaml'), 'utf8'), /createdAt: "?2026-01-01T00:00:00Z"?/u);

    const cat = captureIo(env);
    assert.equal(await generateCommand(['catalog', join(dir, 'out'), '--output-dir', join(dir, 'catalog')], cat), 0, cat.err());
    const docs = parseAllDocuments(await readFile(join(dir, 'catalog/app-operator/catalog.yaml'), 'utf8')).map((d) => d.toJS() as { schema: string });
    assert.deepEqual(docs.map((d) => d.schema), ['olm.package', 'olm.channel', 'olm.bundle']);
  });
});
