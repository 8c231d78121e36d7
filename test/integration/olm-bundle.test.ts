/**
 * `chartpilot generate bundle` and `generate catalog` judged by the Operator Framework's own tools
 * (built by devcluster/provision.sh olm-tools): `operator-sdk bundle validate`'s checks (run by our
 * bundle-validate, which links the same libraries), default and with OperatorHub's checks
 * (suite=operatorframework), for the sample, a chart with values.schema.json, a kind run as a
 * ServiceAccount, several kinds in one watches file; `opm render` of a bundle and `opm validate` of
 * a catalog with an upgrade edge. Where operator-sdk is built, bundle-validate must agree with it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { BIN, fixtureChart, REPO_ROOT, SAMPLE_CHART } from './fixtures.js';
import { assertBundleValid, bundleValidate, generate, helmEnv, HUB_FLAGS, ICON_SVG, olmToolsBeforeAll } from './olm-tools.js';

const olmTools = olmToolsBeforeAll(['bundle-validate']); // the same build makes opm

/** Writes watches.yaml and an icon into a new directory. */
async function project(watches: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-olm-'));
  await writeFile(join(dir, 'watches.yaml'), watches);
  await writeFile(join(dir, 'icon.svg'), ICON_SVG);
  return dir;
}

const SUITE = ['--select-optional', 'suite=operatorframework'];

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

describe('OLM bundles, validated with operator-sdk\'s checks', () => {

  for (const [name, watches] of Object.entries(CASES)) {
    it(`passes bundle validation, default and suite=operatorframework: ${name}`, async () => {
      const dir = await project(watches);
      await generate(dir, ['bundle', '--version', '0.1.0', '--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS]);
      const csv = await readFile(join(dir, 'bundle/manifests/webapp-operator.clusterserviceversion.yaml'), 'utf8');
      await assertBundleValid(olmTools(), join(dir, 'bundle'));
      await assertBundleValid(olmTools(), join(dir, 'bundle'), SUITE);
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
    const r = await bundleValidate(olmTools(), join(dir, 'bundle'), SUITE);
    assert.equal(r.exitCode, 1, r.output);
    assert.match(r.output, /level=error msg=".*Provider.Name not specified/u);
    assert.match(r.output, /level=error msg=".*csv.Spec.Icon elements should contain both data and mediatype/u);
    // The default checks (what OLM itself needs) pass regardless.
    await assertBundleValid(olmTools(), join(dir, 'bundle'));
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
    await assertBundleValid(olmTools(), join(dir, 'bundle'), SUITE);
  });
});

/** The findings of one validation, comparable across the two tools: level and message, sorted. */
function findings(output: string): string[] {
  return output.split('\n').flatMap((line) => {
    const m = /level=(\w+) msg="(.*)"$/u.exec(line);
    if (m === null || m[2]?.startsWith('All validation tests') === true) return [];
    // A bundle that cannot be loaded: both stop with one fatal line, worded differently (ours names the fix).
    return [m[1] === 'fatal' ? 'fatal' : `${m[1] ?? ''} ${m[2] ?? ''}`];
  }).sort();
}

describe('bundle-validate agrees with operator-sdk bundle validate', () => {
  it('gives the same exit code and findings on good and broken bundles, default and suite=operatorframework', async (t) => {
    const tools = olmTools();
    if (tools.operatorSdk === undefined) {
      t.skip('operator-sdk is not built here (CI does not need it): bash devcluster/provision.sh operator-sdk');
      return;
    }
    const operatorSdk: string = tools.operatorSdk;
    const good = await project(CASES['sample'] ?? '');
    await generate(good, ['bundle', '--version', '0.1.0', '--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS]);
    const csvPath = join(good, 'bundle/manifests/webapp-operator.clusterserviceversion.yaml');
    const csv = await readFile(csvPath, 'utf8');
    const noMetadata = await project(CASES['sample'] ?? '');
    await generate(noMetadata, ['bundle', '--version', '0.1.0', '--offline']);
    /** A copy of the good bundle, broken by `change`. */
    const broken = async (change: (bundle: string) => Promise<void>): Promise<string> => {
      const dir = await project(CASES['sample'] ?? '');
      await generate(dir, ['bundle', '--version', '0.1.0', '--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS]);
      await change(join(dir, 'bundle'));
      return dir;
    };
    const bundles: Record<string, string> = {
      good,
      'no provider, no icon': noMetadata,
      'a kind registry+v1 cannot carry': await broken((b) => writeFile(join(b, 'manifests/extra.yaml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: extra}\nspec: {}\n')),
      'no channels annotation': await broken(async (b) => {
        const file = join(b, 'metadata/annotations.yaml');
        await writeFile(file, (await readFile(file, 'utf8')).replace(/^.*channels\.v1.*\n/mu, ''));
      }),
      'an owned CRD version the bundle lacks': await broken((b) => writeFile(join(b, 'manifests/webapp-operator.clusterserviceversion.yaml'), csv.replace(/^( {8}version: )v1alpha1$/mu, '$1v9'))),
      'no CSV': await broken(async (b) => {
        for (const f of await readdir(join(b, 'manifests'))) if (f.endsWith('.clusterserviceversion.yaml')) await rm(join(b, 'manifests', f));
      }),
    };
    let failures = 0;
    for (const [name, dir] of Object.entries(bundles)) {
      for (const extra of [[], SUITE]) {
        // The same relative path for both: operator-sdk names the directory relative to its cwd.
        const theirs = await execa(operatorSdk, ['bundle', 'validate', 'bundle', ...extra], { cwd: dir, reject: false, all: true });
        const ours = await execa(tools.bundleValidate, ['bundle', ...extra], { cwd: dir, reject: false, all: true });
        const what = `${name} ${extra.join(' ') || 'default'}`;
        assert.equal(ours.exitCode, theirs.exitCode, `${what}:\noperator-sdk:\n${theirs.all}\nbundle-validate:\n${ours.all}`);
        assert.deepEqual(findings(ours.all), findings(theirs.all), what);
        if (theirs.exitCode !== 0) failures++;
      }
    }
    // The broken bundles really are refused (else agreeing would prove little): 4 both ways, 1 by suite only.
    assert.equal(failures, 9);
  });
});
