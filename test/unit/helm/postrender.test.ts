import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';

import { emitManifest, NO_OBJECTS } from '../../../src/helm/postrender/emit.js';
import { injectMetadata } from '../../../src/helm/postrender/inject.js';
import { resolveManifestObjects } from '../../../src/helm/postrender/resolve.js';
import {
  installPostRenderPlugin,
  NODE_ENV,
  POSTRENDER_PLUGIN_NAME,
  POSTRENDER_PLUGIN_YAML,
  POSTRENDER_SCRIPT,
  postrenderScript,
  SCRIPT_ENV,
} from '../../../src/helm/postrender/plugin.js';
import { packageRoot } from '../../../src/lib/package-root.js';
import { parsePostRenderSpec, SPEC_ENV } from '../../../src/helm/postrender/spec.js';

const SPEC = {
  labels: { 'helm.sdk.operatorframework.io/chart': 'webapp-0.1.0', flag: 'on' },
  annotations: { 'operator-sdk/primary-resource': 'ns/app', note: 'hello, world' },
};

/** Shaped like helm 4's rendered output: `---` + `# Source:` comment per document. */
const MANIFEST = `---
# Source: webapp/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: rel-config
  labels:
    app.kubernetes.io/name: webapp
    flag: "off"
data:
  mode: 0755
  enabled: yes
  big: 12345678901234567890
---
# Source: webapp/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: rel-web
  labels:
spec:
  ports:
    - port: 80
---
# Source: webapp/templates/list.yaml
apiVersion: v1
kind: ConfigMapList
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: a}
  - apiVersion: v1
    kind: ConfigMap
---
# Source: webapp/templates/empty.yaml
# nothing rendered here
---
apiVersion: v1
kind: Secret
stringData:
  k: v
`;

interface Meta {
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Obj {
  kind?: string;
  metadata?: Meta;
  items?: Obj[];
  data?: Record<string, unknown>;
}

function objects(out: string): (Obj | null)[] {
  // Read back with YAML 1.1 rules, as helm (go-yaml) does.
  return parseAllDocuments(out, { version: '1.1', intAsBigInt: true }).map((d) => d.toJS() as Obj | null);
}

function assertInjected(meta: Meta | undefined): void {
  assert.ok(meta);
  for (const [k, v] of Object.entries(SPEC.labels)) assert.equal(meta.labels?.[k], v, `label ${k}`);
  for (const [k, v] of Object.entries(SPEC.annotations)) assert.equal(meta.annotations?.[k], v, `annotation ${k}`);
}

/** The i-th document, which must be an object. */
function doc(docs: readonly (Obj | null)[], i: number): Obj {
  const d = docs[i];
  assert.ok(d, `document ${String(i)} is an object`);
  return d;
}

describe('post-render', () => {
  it('injectMetadata adds labels and annotations to every object, a List flattened into its items', () => {
    const docs = objects(injectMetadata(MANIFEST, SPEC));
    // ConfigMap, Service, the List's two items (the decoder's view), Secret; the empty one dropped.
    assert.deepEqual(docs.map((d) => d?.kind), ['ConfigMap', 'Service', 'ConfigMap', 'ConfigMap', 'Secret']);
    const cm = doc(docs, 0);
    assertInjected(cm.metadata);
    assert.equal(cm.metadata?.labels?.['app.kubernetes.io/name'], 'webapp', 'existing labels kept');
    assert.equal(cm.metadata.name, 'rel-config');
    assertInjected(doc(docs, 1).metadata); // `labels:` was null
    assert.equal(doc(docs, 2).metadata?.name, 'a');
    assertInjected(doc(docs, 2).metadata);
    assertInjected(doc(docs, 3).metadata);
    assertInjected(doc(docs, 4).metadata); // had no metadata at all
  });

  it('injectMetadata emits what go-yaml would read, as JSON documents nobody can read differently', () => {
    const out = injectMetadata(MANIFEST, SPEC);
    const cm = doc(objects(out), 0);
    assert.equal(cm.data?.['mode'], 0o755n, 'YAML 1.1 octal read as go-yaml reads it');
    assert.equal(cm.data['enabled'], true, 'YAML 1.1 boolean read as go-yaml reads it');
    assert.equal(cm.data['big'], 12345678901234567890n, 'big integers are not rounded');
    assert.match(out, /"flag": "on"/, 'injected values are strings');
    assert.match(out, /"big": 12345678901234567890[,}]/);
    for (const d of out.split('---\n').slice(1)) assert.doesNotThrow(() => JSON.parse(d), 'every document is plain JSON');
  });

  it('injectMetadata with an empty spec emits the objects as resolved', () => {
    const out = injectMetadata(MANIFEST, { labels: {}, annotations: {} });
    assert.equal(out, emitManifest(resolveManifestObjects(MANIFEST)));
  });

  it('a chart that renders no objects post-renders to a comment: not empty to helm, no object to any reader', () => {
    for (const rendered of ['', '---\n# Source: optional/templates/configmap.yaml\n', '\n---\n\n']) {
      const out = injectMetadata(rendered, SPEC);
      assert.equal(out, NO_OBJECTS);
      assert.notEqual(out.trim(), '', "helm's plugin post-renderer refuses whitespace");
      assert.deepEqual(resolveManifestObjects(out), []);
    }
  });

  it('injectMetadata rejects invalid YAML rather than passing it on', () => {
    assert.throws(() => injectMetadata('a: b\n  c: d\n', SPEC), /not valid YAML/);
  });

  it('parsePostRenderSpec accepts only string maps', () => {
    assert.deepEqual(parsePostRenderSpec('{"labels":{"a":"b"}}'), { labels: { a: 'b' }, annotations: {} });
    assert.throws(() => parsePostRenderSpec('nope'), /not valid JSON/);
    assert.throws(() => parsePostRenderSpec('[]'), /JSON object/);
    assert.throws(() => parsePostRenderSpec('{"labels":{"a":1}}'), /must be a string/);
  });

  // The same script in both layouts chartpilot runs from: tsc's main.js (what these tests' process
  // would use) and the bundle's postrender.js (what bin/chartpilot.js and the image use).
  const SCRIPTS = { tsc: POSTRENDER_SCRIPT, bundle: postrenderScript({ root: packageRoot(), bundled: true }) };
  for (const [layout, script] of Object.entries(SCRIPTS)) {
    describe(`the post-render script (${layout}: ${script.slice(packageRoot().length + 1)})`, () => {
      const runScript = async (args: string[], input: string, env: Record<string, string> = {}) => {
        const r = await execa(process.execPath, [script, ...args], { input, env, reject: false, stripFinalNewline: false });
        return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
      };

      it('transforms a manifest on stdin (spec as argument)', async () => {
        const { code, stdout, stderr } = await runScript([JSON.stringify(SPEC)], MANIFEST);
        assert.equal(code, 0, stderr);
        assert.equal(stdout, injectMetadata(MANIFEST, SPEC));
      });

      it('reads its spec from the environment when no argument is given', async () => {
        const { code, stdout } = await runScript([], MANIFEST, { [SPEC_ENV]: JSON.stringify(SPEC) });
        assert.equal(code, 0);
        assertInjected(doc(objects(stdout), 0).metadata);
      });

      it('fails loudly on a bad spec or bad input', async () => {
        const noSpec = await runScript([], MANIFEST);
        assert.equal(noSpec.code, 1);
        assert.match(noSpec.stderr, /no spec given/);
        assert.equal(noSpec.stdout, '');
        const badYaml = await runScript([JSON.stringify(SPEC)], 'a: b\n  c: d\n');
        assert.equal(badYaml.code, 1);
        assert.match(badYaml.stderr, /not valid YAML/);
      });
    });
  }

  it('the plugin.yaml checked in equals the one the client installs', async () => {
    const checkedIn = fileURLToPath(new URL('../../../../src/helm/postrender/plugin.yaml', import.meta.url));
    assert.equal(await readFile(checkedIn, 'utf8'), POSTRENDER_PLUGIN_YAML);
  });

  it('installPostRenderPlugin writes a private plugin dir that close() or process exit removes', async () => {
    const p = await installPostRenderPlugin({ nodeBin: '/usr/bin/node-of-choice', curlBin: null });
    assert.equal((await stat(p.pluginsDir)).mode & 0o777, 0o700);
    assert.equal(await readFile(join(p.pluginsDir, POSTRENDER_PLUGIN_NAME, 'plugin.yaml'), 'utf8'), POSTRENDER_PLUGIN_YAML);
    assert.equal((await stat(p.wrapper)).mode & 0o777, 0o700);
    assert.equal(p.transport, 'script');
    assert.deepEqual(p.env, { [NODE_ENV]: '/usr/bin/node-of-choice', [SCRIPT_ENV]: POSTRENDER_SCRIPT });
    await p.remove();
    await assert.rejects(stat(p.pluginsDir), { code: 'ENOENT' });

    // A process that never removes it: gone at exit all the same.
    const pluginModule = new URL('../../../src/helm/postrender/plugin.js', import.meta.url).href;
    const child = await execa(process.execPath, [
      '--input-type=module',
      '-e',
      `const { installPostRenderPlugin } = await import(${JSON.stringify(pluginModule)}); process.stdout.write((await installPostRenderPlugin()).pluginsDir);`,
    ]);
    assert.match(child.stdout, /chartpilot-helm-plugins-/);
    await assert.rejects(stat(child.stdout), { code: 'ENOENT' });
  });
});
