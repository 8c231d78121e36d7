/**
 * The post-renderer decides on objects as chartpilot's resolver reads the manifest; helm reads
 * the same text with go-yaml v3 (kyaml, in splitAndDeannotate, which splits it and writes it
 * back) and then go-yaml v2 (its kube client, through sigs.k8s.io/yaml), which builds what is
 * applied. Every case of the corpus runs through both sides — helm's readers in
 * devcluster/yaml-readers, linked from helm v4.1.4's very modules — and wherever chartpilot accepts
 * a manifest, it must read the objects go-yaml v2 reads of the text and those helm's whole path
 * applies, and kyaml must parse it into the same documents with the same file annotations (its
 * own typing of scalars, never applied by helm 4.1.4, does not count). Three texts per case: the
 * case itself; what helm hands a post-renderer for it (kyaml's re-emission); and what chartpilot's
 * post-renderer emits for it, which helm then reads — and stores, as chartpilot must read back
 * (record-origin.ts judges release records that way).
 *
 * This needs Go (the program is built into the cache outside the repository on first use, ~2 s
 * after chartpilot-helm's build, which compiles the same packages); without it the test fails.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';

import { injectMetadata, PostRenderRefusal } from '../../../src/helm/postrender/inject.js';
import { isObject, resolveManifestObjects, type JsonObject } from '../../../src/helm/postrender/resolve.js';
import { HELM_POSTRENDER_FILENAME_ANNOTATION } from '../../../src/helm/postrender/resolve.js';
import type { PostRenderSpec } from '../../../src/helm/types.js';
import { canonicalObjects } from './yaml-readers/compare.js';
import { CORPUS, type Verdict } from './yaml-readers/corpus.js';
import { helmRequirements, linkedModules, readWithHelm, yamlReadersBinary, type Case, type Readings } from './yaml-readers/go-readers.js';

const HELM_VERSION = 'v4.1.4';

/** A permissive entry: only what the manifest itself makes unreadable is refused. */
const SPEC: PostRenderSpec = {
  labels: {},
  annotations: {},
  owner: {
    reference: { apiVersion: 'demo.chartpilot.io/v1alpha1', kind: 'WebApp', name: 'shop', uid: 'uid-1' },
    namespace: 'team-a',
    namespacedKinds: ['v1/ConfigMap', 'v1/Secret', 'apps/v1/Deployment'],
    clusterScopedKinds: ['v1/Namespace'],
    nonOwnedAnnotations: { 'operator-sdk/primary-resource': 'team-a/shop' },
    allowClusterScoped: true,
    allowCrossNamespace: true,
  },
};

/** chartpilot's post-renderer on a text: what it emits, or that it refuses. */
function postRender(yaml: string): { verdict: Verdict; emitted: string | undefined; why: string } {
  try {
    return { verdict: 'accepts', emitted: injectMetadata(yaml, SPEC), why: '' };
  } catch (err) {
    if (err instanceof PostRenderRefusal) return { verdict: 'refuses', emitted: undefined, why: err.message };
    throw err;
  }
}

/**
 * The readings whose objects helm applies, each compared object for object: the kube client's
 * (go-yaml v2) on the text itself, and helm's whole path after a post-renderer, which reads what
 * kyaml writes back with go-yaml v2 again.
 */
const READERS = [
  { key: 'v2', what: "go-yaml v2 (helm's kube client: cli-runtime, sigs.k8s.io/yaml)", ordered: true },
  { key: 'helm', what: 'helm’s whole path after a post-renderer (kyaml, re-emit, SortManifests, kube client)', ordered: false },
] as const;

const KYAML = "kyaml's kio.ParseAll, as splitAndDeannotate";

/**
 * Every difference between chartpilot's objects for `yaml` and helm's readings of it. kyaml's own
 * reading counts only where helm uses it — whether it parses at all, the documents it makes
 * (each as kyaml writes it and the kube client builds it, in stream order) and the file annotation
 * it reads with GetMeta — not in how go-yaml v3 types a scalar, which helm 4.1.4 never applies.
 */
function differences(yaml: string, readings: Readings | undefined): string[] {
  assert.ok(readings !== undefined, 'the Go program gave no result for this text');
  const ours = resolveManifestObjects(yaml);
  const out: string[] = [];
  for (const { key, what, ordered } of READERS) {
    const theirs = readings[key];
    if (theirs.error !== undefined) {
      out.push(`${what} refuses it: ${theirs.error}`);
      continue;
    }
    const a = canonicalObjects(ours, ordered);
    const b = canonicalObjects(theirs.objects, ordered);
    if (a.join('\n') !== b.join('\n')) out.push(`${what} reads other objects:\n  chartpilot: ${a.join('\n              ')}\n  helm:       ${b.join('\n              ')}`);
  }
  const kyaml = readings.kyaml;
  if (kyaml.error !== undefined) return [...out, `${KYAML} refuses it: ${kyaml.error}`];
  const a = canonicalObjects(ours, true);
  const b = canonicalObjects(kyaml.objects, true);
  if (a.join('\n') !== b.join('\n')) {
    out.push(`${KYAML} makes other documents of it:\n  chartpilot: ${a.join('\n              ')}\n  kyaml:      ${b.join('\n              ')}`);
    return out;
  }
  let at = 0;
  for (const [i, d] of kyaml.documents.entries()) {
    for (const object of ours.slice(at, at + d.objects)) {
      const mine = fileOf(object);
      if (mine !== (d.file === '' ? undefined : d.file)) out.push(`${KYAML} reads the file annotation of its document ${String(i + 1)} as ${JSON.stringify(d.file)}, chartpilot as ${JSON.stringify(mine)}`);
    }
    at += d.objects;
  }
  return out;
}

/** helm's file-name annotation as chartpilot reads it ("" is none, to helm too). */
function fileOf(object: JsonObject): string | undefined {
  const metadata = object['metadata'];
  const annotations = isObject(metadata) ? metadata['annotations'] : undefined;
  const file = isObject(annotations) ? annotations[HELM_POSTRENDER_FILENAME_ANNOTATION] : undefined;
  return typeof file === 'string' && file !== '' ? file : undefined;
}

describe('helm’s YAML readers and the post-renderer read every manifest alike', () => {
  let binary = '';
  let direct = new Map<string, Readings>();
  let derived = new Map<string, Readings>();
  const verdicts = new Map(CORPUS.map((c) => [c.name, postRender(c.yaml)]));
  // A before-hook that throws leaves node's tests "cancelled", not failed, and the summary's
  // `ℹ fail` line (what CI reads) at 0: so the hook keeps its error and every test fails on it.
  let unavailable: Error | undefined;
  const ready = (): void => {
    if (unavailable !== undefined) throw unavailable;
  };

  before(async () => {
    try {
      await readAll();
    } catch (err) {
      unavailable = err instanceof Error ? err : new Error(String(err));
    }
  }, { timeout: 20 * 60_000 });

  async function readAll(): Promise<void> {
    binary = await yamlReadersBinary();
    direct = await readWithHelm(binary, CORPUS.map(({ name, yaml }) => ({ name, yaml })));
    // The texts the first pass makes: chartpilot's output for each case, kyaml's re-emission of it.
    const second: Case[] = [];
    for (const c of CORPUS) {
      const emitted = verdicts.get(c.name)?.emitted;
      if (emitted !== undefined) second.push({ name: `emitted: ${c.name}`, yaml: emitted });
      const reemitted = direct.get(c.name)?.reemitted;
      if (reemitted !== undefined) second.push({ name: `reemitted: ${c.name}`, yaml: reemitted });
    }
    derived = await readWithHelm(binary, second);
  }

  it(`links exactly the module versions helm ${HELM_VERSION} requires`, async () => {
    ready();
    const linked = await linkedModules(binary);
    const wanted = await helmRequirements(HELM_VERSION);
    assert.equal(linked.get('helm.sh/helm/v4'), HELM_VERSION);
    const wrong = [...linked].filter(([path, v]) => path !== 'helm.sh/helm/v4' && wanted.get(path) !== v).map(([path, v]) => `${path} ${v} (helm: ${wanted.get(path) ?? 'not required'})`);
    assert.deepEqual(wrong, []);
    assert.ok(linked.has('go.yaml.in/yaml/v2') && linked.has('go.yaml.in/yaml/v3') && linked.has('sigs.k8s.io/kustomize/kyaml'), 'links both go-yaml versions and kyaml');
  });

  it('the corpus has unique names and accepts as well as refuses', () => {
    assert.equal(new Set(CORPUS.map((c) => c.name)).size, CORPUS.length);
    assert.ok(CORPUS.filter((c) => c.chartpilot === 'accepts').length >= 50);
  });

  for (const c of CORPUS) {
    it(`${c.chartpilot === 'accepts' ? 'accepts' : 'refuses'} ${c.name}`, () => {
      ready();
      const own = verdicts.get(c.name);
      assert.ok(own !== undefined);
      if (own.emitted === undefined) {
        assert.equal(own.verdict, c.chartpilot, `chartpilot refuses it: ${own.why}`);
        return; // refused: whatever helm makes of it is never applied
      }
      const found = differences(c.yaml, direct.get(c.name));
      assert.equal(own.verdict, c.chartpilot, `chartpilot accepts it, ${found.length === 0 ? 'and helm reads it alike' : `and:\n${found.join('\n')}`}`);
      assert.deepEqual(found, [], 'chartpilot accepts this text, and helm reads it otherwise');
      // What chartpilot emits is what helm then reads: the same objects, by every reader.
      const emitted = derived.get(`emitted: ${c.name}`);
      assert.deepEqual(differences(own.emitted, emitted), [], 'helm reads chartpilot’s output otherwise');
      // And what helm stores of it chartpilot reads back (record-origin.ts judges its records so).
      assert.ok(emitted !== undefined && (emitted.stored.length > 0 || resolveManifestObjects(own.emitted).length === 0), 'helm stored nothing');
      const stored = emitted.stored.flatMap((m) => resolveManifestObjects(m));
      assert.deepEqual(canonicalObjects(stored, false), canonicalObjects(resolveManifestObjects(own.emitted), false), 'chartpilot reads what helm stores of its output otherwise');
      // A chart's file reaches the post-renderer as kyaml re-emits it: still accepted, still alike.
      const reemitted = direct.get(c.name)?.reemitted;
      assert.ok(reemitted !== undefined, 'kyaml accepted the text but did not re-emit it');
      const again = postRender(reemitted);
      assert.equal(again.verdict, 'accepts', `chartpilot refuses kyaml's re-emission of it: ${again.why}\n${reemitted}`);
      assert.deepEqual(differences(reemitted, derived.get(`reemitted: ${c.name}`)), [], `helm reads kyaml's re-emission otherwise:\n${reemitted}`);
    });
  }
});
