/**
 * `chartpilot generate bundle` and `generate catalog` judged by the Operator Framework's own tools
 * (built by devcluster/provision.sh olm-tools): `operator-sdk bundle validate`, default and with
 * OperatorHub's checks (suite=operatorframework), for the sample, a chart with values.schema.json,
 * a kind run as a ServiceAccount, several kinds in one watches file; `opm render` of a bundle and
 * `opm validate` of a catalog with an upgrade edge.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { BIN, fixtureChart, REPO_ROOT, SAMPLE_CHART } from './fixtures.js';
import { generate, helmEnv, HUB_FLAGS, ICON_SVG, olmToolsBeforeAll } from './olm-tools.js';

const olmTools = olmToolsBeforeAll(['operator-sdk', 'opm']);

/** Writes watches.yaml and an icon into a new directory. */
async function project(watches: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-olm-'));
  await writeFile(join(dir, 'watches.yaml'), watches);
  await writeFile(join(dir, 'icon.svg'), ICON_SVG);
  return dir;
}

async function validate(operatorSdk: string, bundleDir: string, extra: readonly string[] = []): Promise<string> {
  const r = await execa(operatorSdk, ['bundle', 'validate', bundleDir, ...extra], { reject: false, all: true });
  const out = r.all;
  assert.equal(r.exitCode, 0, `operator-sdk bundle validate ${extra.join(' ')} failed:\n${out}`);
  assert.doesNotMatch(out, /level=error/u, out);
  return out;
}

const CASES: Record<string, string> = {
  // The repository's own watches.yaml and sample chart (which has a values.schema.json).
  sample: `- {group: demo.chartpilot.io, version: v1alpha1, kind: WebApp, chart: ${SAMPLE_CHART}}\n`,
  impersonation: `- {group: demo.chartpilot.io, version: v1alpha1, kind: WebApp, chart: ${SAMPLE_CHART}, serviceAccount: webapp-deployer}\n`,
  'several kinds': [
    `- {group: demo.chartpilot.io, version: v1alpha1, kind: WebApp, chart: ${SAMPLE_CHART}}`,
    `- {group: demo.chartpilot.io, version: v1beta1, kind: WebApp, chart: ${SAMPLE_CHART}}`,
    `- {group: test.chartpilot.io, version: v1, kind: Tiny, chart: ${fixtureChart('tiny')}}`,
    `- {group: test.chartpilot.io, version: v1, kind: Settings, chart: ${fixtureChart('settings')}}`,
    '',
  ].join('\n'),
};

describe('OLM bundles, validated by operator-sdk', () => {

  for (const [name, watches] of Object.entries(CASES)) {
    it(`passes operator-sdk bundle validate, default and suite=operatorframework: ${name}`, async () => {
      const dir = await project(watches);
      await generate(dir, ['bundle', '--version', '0.1.0', '--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS]);
      const csv = await readFile(join(dir, 'bundle/manifests/webapp-operator.clusterserviceversion.yaml'), 'utf8');
      await validate(olmTools().operatorSdk, join(dir, 'bundle'));
      await validate(olmTools().operatorSdk, join(dir, 'bundle'), ['--select-optional', 'suite=operatorframework']);
      if (name === 'impersonation') assert.match(csv, /- impersonate/u, 'the operator may impersonate the kind\'s ServiceAccount');
      if (name === 'several kinds') {
        const owned = csv.match(/^ {6}- name: \S+\n {8}version: \S+/gmu) ?? [];
        assert.equal(owned.length, 4, csv);
      }
      if (name === 'sample') assert.match(csv, /specDescriptors:\n\s+- path: image.repository/u, 'descriptions from values.schema.json');
    });
  }

  it('fails OperatorHub\'s checks without the metadata the generator warned about, naming each field', async () => {
    const dir = await project(CASES['sample'] ?? '');
    const { stderr } = await generate(dir, ['bundle', '--version', '0.1.0', '--offline']);
    assert.match(stderr, /warning: the bundle has no provider .* --provider/u);
    assert.match(stderr, /warning: the bundle has no icon .*--icon/u);
    const r = await execa(olmTools().operatorSdk, ['bundle', 'validate', join(dir, 'bundle'), '--select-optional', 'suite=operatorframework'], { reject: false, all: true });
    assert.notEqual(r.exitCode, 0);
    assert.match(r.all, /Provider.Name not specified/u);
    // The default checks (what OLM itself needs) pass regardless.
    await validate(olmTools().operatorSdk, join(dir, 'bundle'));
  });
});

describe('OLM catalog, validated by opm', () => {

  it('renders each bundle with opm and validates a catalog over 0.1.0 → 0.2.0', async () => {
    const dir = await project(CASES['sample'] ?? '');
    const common = ['--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS, '--channels', 'alpha,stable', '--default-channel', 'stable'];
    await generate(dir, ['bundle', '--version', '0.1.0', '--output-dir', 'v0.1.0', ...common]);
    await generate(dir, ['bundle', '--version', '0.2.0', '--output-dir', 'v0.2.0', '--replaces', '0.1.0', '--skip-range', '>=0.1.0 <0.2.0', ...common]);
    await generate(dir, ['catalog', 'v0.1.0', 'v0.2.0', '--output-dir', 'catalog']);

    const validated = await execa(olmTools().opm, ['validate', join(dir, 'catalog')], { reject: false, all: true });
    assert.equal(validated.exitCode, 0, validated.all);

    // opm's own rendering of a bundle directory: the same bundle as our catalog's olm.bundle.
    const rendered = await execa(olmTools().opm, ['render', join(dir, 'v0.2.0/bundle'), '-o', 'yaml'], { reject: false, all: true });
    assert.equal(rendered.exitCode, 0, rendered.all);
    interface Blob { schema: string; name: string; package?: string; properties?: { type: string; value: unknown }[]; entries?: unknown[] }
    const opmBundle = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as Blob).find((b) => b.schema === 'olm.bundle');
    const ours = parseAllDocuments(await readFile(join(dir, 'catalog/webapp-operator/catalog.yaml'), 'utf8')).map((d) => d.toJS() as Blob);
    const ourBundle = ours.find((b) => b.schema === 'olm.bundle' && b.name === 'webapp-operator.v0.2.0');
    assert.ok(opmBundle !== undefined && ourBundle !== undefined);
    assert.equal(opmBundle.name, ourBundle.name);
    assert.equal(opmBundle.package, ourBundle.package);
    const keys = (b: Blob, type: string): string[] => (b.properties ?? []).filter((p) => p.type === type).map((p) => JSON.stringify(p.value)).sort();
    for (const type of ['olm.package', 'olm.gvk']) assert.deepEqual(keys(ourBundle, type), keys(opmBundle, type), type);
    // The same objects (opm sorts their keys; deepEqual does not care), in kind/name order.
    const objects = (b: Blob): Record<string, unknown>[] =>
      (b.properties ?? [])
        .filter((p) => p.type === 'olm.bundle.object')
        .map((p) => JSON.parse(Buffer.from((p.value as { data: string }).data, 'base64').toString()) as Record<string, unknown>)
        .sort((x, y) => (JSON.stringify([x['kind'], x['metadata']]) < JSON.stringify([y['kind'], y['metadata']]) ? -1 : 1));
    const ourObjects = objects(ourBundle);
    assert.equal(ourObjects.length, 4, 'CSV, CRD, metrics Service, metrics-reader ClusterRole');
    assert.deepEqual(ourObjects, objects(opmBundle), 'the same objects inline');
    assert.deepEqual((ourBundle as { relatedImages?: unknown }).relatedImages, (opmBundle as { relatedImages?: unknown }).relatedImages);

    const stable = ours.find((b) => b.schema === 'olm.channel' && b.name === 'stable');
    assert.deepEqual(stable?.entries, [{ name: 'webapp-operator.v0.1.0' }, { name: 'webapp-operator.v0.2.0', replaces: 'webapp-operator.v0.1.0', skipRange: '>=0.1.0 <0.2.0' }]);
  });

  it('keeps the repository sample in step: generate bundle of watches.yaml validates', async () => {
    const dir = await project(await readFile(join(REPO_ROOT, 'watches.yaml'), 'utf8'));
    const r = await execa(process.execPath, [BIN, 'generate', 'bundle', '--version', '0.1.0', '--offline', '--watches-file', join(REPO_ROOT, 'watches.yaml'), '--icon', 'icon.svg', ...HUB_FLAGS], {
      cwd: dir,
      reject: false,
      env: helmEnv(),
    });
    assert.equal(r.exitCode, 0, r.stderr);
    await validate(olmTools().operatorSdk, join(dir, 'bundle'), ['--select-optional', 'suite=operatorframework']);
  });
});
