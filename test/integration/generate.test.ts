/**
 * Generated manifests against the real API server: deploy/ is current and applies, derived CRD
 * schemas are structural (the API server refuses anything else) and check what they promise, and
 * `chartpilot new` scaffolds a project whose deploy/ applies as is.
 */
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { loadWatches } from '../../src/config/watches.js';
import { newCommand } from '../../src/generate/cli.js';
import { generateCrds } from '../../src/generate/crd.js';
import { tableResolver } from '../../src/generate/rbac-plan.js';
import { crdYaml, renderBundle } from '../../src/generate/render.js';
import { established } from './crd.js';
import { REPO_ROOT } from './fixtures.js';
import { getJson, newNamespace, testCluster, type RunResult, type TestCluster } from './harness.js';
import { waitFor } from './wait.js';

const DEPLOY = join(REPO_ROOT, 'deploy');
/** Hand-written files in deploy/ (everything else there is generated). */
const HAND_WRITTEN = new Set(['README.md', 'webapp.Dockerfile']);
const REGENERATE = 'chartpilot generate all --output-dir deploy --image chartpilot-webapp:0.1.0 --offline';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** `kubectl apply` of one object; resolves with the result (failures included). */
function applyObject(cluster: TestCluster, obj: unknown, extra: string[] = []): Promise<RunResult> {
  return cluster.kubectl(['apply', ...extra, '-f', '-'], { input: JSON.stringify(obj), allowFail: true });
}

/** Deletes what `args` name when the test ends (cluster-scoped objects outlive test namespaces). */
function deleteAfter(t: TestContext, cluster: TestCluster, args: string[]): void {
  t.after(async () => {
    await cluster.kubectl(['delete', ...args, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });
}

/**
 * What deploy/operator-metrics.yaml promises, asked of the API server: its Service resolves to the
 * operator pod's https port, the operator may create the token and access reviews
 * --metrics-require-rbac makes (what it checks at start), and get on /metrics is for who is bound
 * to metrics-reader.
 */
async function metricsReachable(t: TestContext, cluster: TestCluster): Promise<void> {
  interface Slices { items: { endpoints?: { targetRef?: { kind: string } }[] | null; ports?: { name: string; port: number }[] | null }[] }
  // The endpoint slice controller resolves the named targetPort against the pod's container ports.
  await waitFor('the metrics Service lists the operator pod on https 8443', async () => {
    const slices = await getJson<Slices>(cluster, ['get', 'endpointslices', '-n', 'chartpilot-system', '-l', 'kubernetes.io/service-name=chartpilot-metrics-service']);
    return slices.items.some((s) => s.endpoints?.some((e) => e.targetRef?.kind === 'Pod') === true && s.ports?.some((p) => p.name === 'https' && p.port === 8443) === true);
  });
  const can = async (who: string, ...what: string[]): Promise<string> =>
    (await cluster.kubectl(['auth', 'can-i', ...what, '--as', who], { allowFail: true })).stdout.trim();
  const operator = 'system:serviceaccount:chartpilot-system:chartpilot';
  assert.equal(await can(operator, 'create', 'tokenreviews.authentication.k8s.io'), 'yes');
  assert.equal(await can(operator, 'create', 'subjectaccessreviews.authorization.k8s.io'), 'yes');
  assert.equal(await can(operator, 'get', '/metrics'), 'no', 'the operator does not scrape itself');

  const scraperNs = await newNamespace(t, 'scraper');
  const scraper = `system:serviceaccount:${scraperNs}:prometheus`;
  assert.equal(await can(scraper, 'get', '/metrics'), 'no');
  const binding = `chartpilot-metrics-reader-${scraperNs}`;
  deleteAfter(t, cluster, ['clusterrolebinding', binding]);
  await cluster.kubectl(['create', 'clusterrolebinding', binding, '--clusterrole=chartpilot-metrics-reader', `--serviceaccount=${scraperNs}:prometheus`]);
  await waitFor('the reader binding takes effect', async () => (await can(scraper, 'get', '/metrics')) === 'yes');
  assert.equal(await can(scraper, 'get', '/api'), 'yes', 'discovery, as for everyone');
  assert.equal(await can(scraper, 'list', 'secrets', '-A'), 'no', 'and nothing else');
}

describe('deploy/', () => {
  it('is exactly what `chartpilot generate all` writes today (CRD, RBAC, Deployment, sample)', async () => {
    const cluster = await testCluster();
    const bundle = await renderBundle(
      {
        name: 'chartpilot',
        namespace: 'chartpilot-system',
        serviceAccount: 'chartpilot',
        image: 'chartpilot-webapp:0.1.0',
        watchesFile: join(REPO_ROOT, 'watches.yaml'),
        resolver: tableResolver,
      },
      cluster.env,
    );
    for (const [file, text] of bundle.files) {
      let committed: string;
      try {
        committed = readFileSync(join(DEPLOY, file), 'utf8');
      } catch {
        assert.fail(`deploy/${file} is missing: run ${REGENERATE}`);
      }
      assert.equal(committed, text, `deploy/${file} is stale: run ${REGENERATE}`);
    }
    const extra = filesUnder(DEPLOY).filter((f) => !bundle.files.has(f) && !HAND_WRITTEN.has(f));
    assert.deepEqual(extra, [], 'deploy/ holds generated files the generator no longer writes');
  });

  it('applies to the cluster with kubectl apply -R -f deploy/, and its CRD validates WebApps', async (t) => {
    const cluster = await testCluster();
    deleteAfter(t, cluster, ['-R', '-f', DEPLOY]);
    // The CRDs first, so the sample's kind exists when the rest is applied (deploy/README.md).
    await cluster.kubectl(['apply', '-f', join(DEPLOY, 'crds')]);
    await established(cluster, 'webapps.demo.chartpilot.io');
    const applied = await cluster.kubectl(['apply', '-R', '-f', DEPLOY], { allowFail: true });
    assert.equal(applied.exitCode, 0, applied.stderr);
    for (const what of [
      'namespace/chartpilot-system',
      'clusterrole/chartpilot-manager',
      'clusterrolebinding/chartpilot-manager',
      'clusterrole/chartpilot-metrics-auth',
      'clusterrolebinding/chartpilot-metrics-auth',
      'clusterrole/chartpilot-metrics-reader',
    ]) {
      await cluster.kubectl(['get', what]);
    }
    for (const what of ['serviceaccount/chartpilot', 'deployment/chartpilot', 'role/chartpilot-leader-election', 'rolebinding/chartpilot-leader-election', 'service/chartpilot-metrics-service', 'networkpolicy/chartpilot-ingress']) {
      await cluster.kubectl(['get', what, '-n', 'chartpilot-system']);
    }
    // The Deployment passes the namespace's restricted Pod Security level: its pod gets created.
    await waitFor('operator pod created', async () => (await cluster.kubectl(['get', 'pods', '-n', 'chartpilot-system', '-o', 'name'])).stdout.trim() !== '');
    await metricsReachable(t, cluster);
    // The sample (in namespace default) passed the CRD's schema; kubectl shows the printer columns.
    const table = await cluster.kubectl(['get', 'webapps', '-n', 'default']);
    assert.match(table.stdout, /^NAME\s+STATE\s+REASON\s+REVISION\s+CHART\s+AGE\s+MESSAGE\n.*webapp-sample/u);
    const short = await cluster.kubectl(['get', 'wa', '-n', 'default', '-o', 'name']);
    assert.equal(short.stdout.trim(), 'webapp.demo.chartpilot.io/webapp-sample');
    const kinds = await cluster.kubectl(['get', 'chartpilot', '-A', '-o', 'name']);
    assert.match(kinds.stdout, /webapp\.demo\.chartpilot\.io\/webapp-sample/, 'the chartpilot category lists it');

    const ns = await newNamespace(t, 'gen-webapp');
    const webapp = (name: string, spec: unknown): unknown => ({ apiVersion: 'demo.chartpilot.io/v1alpha1', kind: 'WebApp', metadata: { name, namespace: ns }, spec });
    const ok = await applyObject(cluster, webapp('ok', { replicaCount: 3, image: { tag: '1.28' }, resources: { requests: { cpu: 0.5, memory: '32Mi' }, claims: [] } }));
    assert.equal(ok.exitCode, 0, ok.stderr);
    const wrongType = await applyObject(cluster, webapp('bad-type', { replicaCount: 'three' }));
    assert.notEqual(wrongType.exitCode, 0);
    assert.match(wrongType.stderr, /spec\.replicaCount: Invalid value: "string": spec\.replicaCount in body must be of type integer/);
    const tooMany = await applyObject(cluster, webapp('too-many', { replicaCount: 51 }));
    assert.match(tooMany.stderr, /spec\.replicaCount: Invalid value: 51: spec\.replicaCount in body should be less than or equal to 50/);
    const badEnum = await applyObject(cluster, webapp('bad-enum', { image: { pullPolicy: 'Sometimes' } }));
    assert.match(badEnum.stderr, /spec\.image\.pullPolicy: Unsupported value: "Sometimes"/);
    // additionalProperties: false → pruned by the server, refused by kubectl's strict field validation.
    const typo = await applyObject(cluster, webapp('typo', { replicaCont: 2 }));
    assert.notEqual(typo.exitCode, 0);
    assert.match(typo.stderr, /unknown field "spec\.replicaCont"/);
    const pruned = await applyObject(cluster, webapp('pruned', { replicaCont: 2, message: 'hi' }), ['--validate=false']);
    assert.equal(pruned.exitCode, 0, pruned.stderr);
    const stored = await cluster.kubectl(['get', 'webapp', 'pruned', '-n', ns, '-o', 'jsonpath={.spec}']);
    assert.deepEqual(JSON.parse(stored.stdout), { message: 'hi' });
  });
});

/** A values.schema.json using the JSON Schema features charts use in the wild. */
const RICH_SCHEMA = {
  $schema: 'https://json-schema.org/draft-07/schema#',
  definitions: {
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/definitions/node' } } } },
  },
  type: 'object',
  additionalProperties: false,
  required: ['host', 'image'],
  properties: {
    host: { type: 'string', format: 'hostname', pattern: '^[a-z0-9.-]+$' },
    image: { type: 'object', required: ['repository'], properties: { repository: { type: 'string' }, tag: { type: ['string', 'null'] } } },
    port: { $ref: '#/definitions/port', description: 'Service port' },
    targetPort: { type: ['integer', 'string'] },
    weight: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
    mode: { const: 'fast' },
    hosts: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] },
    quantity: { type: ['string', 'number'] },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    username: { type: 'string', pattern: '^(?!root$).+$' },
    tree: { $ref: '#/definitions/node' },
    size: { allOf: [{ type: 'integer', minimum: 1 }, { maximum: 10 }] },
    tls: {
      type: 'object',
      additionalProperties: false,
      properties: { secretName: { type: 'string' }, cert: { type: 'string' } },
      oneOf: [{ required: ['secretName'] }, { required: ['cert'] }],
    },
    extra: { type: 'object', properties: { known: { type: 'boolean' } } },
    either: { anyOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { type: 'array', items: { type: 'string' } }] },
  },
};

describe('CRD schemas derived from values.schema.json', () => {
  it('are structural (the API server accepts them) and check what they say', async (t) => {
    const cluster = await testCluster();
    const dir = await mkdtemp(join(tmpdir(), 'chartpilot-gen-schema-'));
    mkdirSync(join(dir, 'templates'));
    writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: rich\nversion: 0.1.0\n');
    // `image` has a default, so it is not required in the CR; `host` has none, so it is.
    writeFileSync(join(dir, 'values.yaml'), 'image:\n  repository: nginx\n');
    writeFileSync(join(dir, 'values.schema.json'), JSON.stringify(RICH_SCHEMA));
    const group = `gen${randomBytes(3).toString('hex')}.test.chartpilot.io`;
    const result = await generateCrds([{ group, version: 'v1', kind: 'RichApp', chartPath: dir }]);
    if (!result.ok) assert.fail(result.problems.join('\n'));
    const crd = result.crds[0];
    assert.ok(crd);
    deleteAfter(t, cluster, ['crd', crd.name]);
    const created = await cluster.kubectl(['apply', '-f', '-'], { input: crdYaml(crd, join(dir, 'watches.yaml')), allowFail: true });
    assert.equal(created.exitCode, 0, `the API server refused the derived schema: ${created.stderr}\n${stringify(crd.object)}`);
    await established(cluster, crd.name);

    const ns = await newNamespace(t, 'gen-schema');
    const cr = (name: string, spec: unknown): unknown => ({ apiVersion: `${group}/v1`, kind: 'RichApp', metadata: { name, namespace: ns }, spec });
    const good = {
      host: 'shop.example.com',
      port: 8080,
      targetPort: 'http',
      weight: 0.5,
      mode: 'fast',
      hosts: ['a', 'b'],
      pair: ['x', 1],
      quantity: 0.5,
      labels: { team: 'web' },
      username: 'root',
      tree: { children: [{ children: [] }] },
      size: 5,
      tls: { secretName: 's' },
      extra: { known: true, anything: { goes: 1 } },
      either: ['x'],
      image: { tag: null },
    };
    // create, not apply: kubectl apply reads a null as "remove this field" and never sends it.
    const accepted = await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(cr('good', good)), allowFail: true });
    assert.equal(accepted.exitCode, 0, accepted.stderr);
    const stored = JSON.parse((await cluster.kubectl(['get', 'richapp', 'good', '-n', ns, '-o', 'jsonpath={.spec}'])).stdout) as Record<string, unknown>;
    assert.deepEqual(stored['extra'], { known: true, anything: { goes: 1 } }, 'objects without additionalProperties keep unknown keys');
    assert.deepEqual(stored['image'], { tag: null }, 'nullable tag keeps its null');

    const refused: [string, unknown, RegExp][] = [
      ['no-host', { port: 80 }, /spec\.host: Required value/],
      ['bad-port', { host: 'a', port: 0 }, /spec\.port: Invalid value: 0: spec\.port in body should be greater than or equal to 1/],
      ['bad-target', { host: 'a', targetPort: true }, /spec\.targetPort/],
      ['bad-weight', { host: 'a', weight: 1 }, /spec\.weight: Invalid value: 1: spec\.weight in body should be less than 1/],
      ['bad-mode', { host: 'a', mode: 'slow' }, /spec\.mode: Unsupported value: "slow"/],
      ['dup-hosts', { host: 'a', hosts: ['a', 'a'] }, /spec\.hosts\[1\]: Duplicate value: "a"/],
      ['bad-label', { host: 'a', labels: { team: 3 } }, /spec\.labels\.team: Invalid value: "integer"/],
      ['bad-size', { host: 'a', size: 11 }, /spec\.size: Invalid value: 11/],
      ['bad-tls', { host: 'a', tls: { secretName: 's', cert: 'c' } }, /"spec\.tls" must validate one and only one schema \(oneOf\)/],
      ['bad-host', { host: 'Not_A_Host' }, /spec\.host in body should match/],
    ];
    for (const [name, spec, message] of refused) {
      const r = await applyObject(cluster, cr(name, spec));
      assert.notEqual(r.exitCode, 0, `${name} must be refused`);
      assert.match(r.stderr, message, name);
    }
  });
});

describe('chartpilot new', () => {
  it('scaffolds a repository whose deploy/ applies, with a watches.yaml the operator loads', async (t) => {
    const cluster = await testCluster();
    const dir = join(await mkdtemp(join(tmpdir(), 'chartpilot-new-')), 'shop-operator');
    const suffix = randomBytes(3).toString('hex');
    const group = `new${suffix}.test.chartpilot.io`;
    const name = `shop-${suffix}`;
    const lines: string[] = [];
    const code = await newCommand([dir, '--chart', join(REPO_ROOT, 'charts/webapp'), '--group', group, '--version', 'v1alpha1', '--kind', 'Shop', '--name', name], {
      stdout: (text) => { lines.push(text); },
      stderr: (line) => { lines.push(line); },
      env: cluster.env,
    });
    assert.equal(code, 0, lines.join('\n'));
    assert.deepEqual(filesUnder(dir).filter((f) => !f.startsWith('charts/')), [
      '.dockerignore',
      'Dockerfile',
      'Makefile',
      'README.md',
      'deploy/Kustomization',
      `deploy/crds/${group}_shops.yaml`,
      'deploy/namespace.yaml',
      'deploy/network-policy.yaml',
      'deploy/operator-metrics.yaml',
      'deploy/operator.yaml',
      'deploy/rbac.yaml',
      'deploy/samples/shop.yaml',
      'deploy/service-account.yaml',
      'monitoring/grafana-dashboard.json',
      'monitoring/prometheus-rule.yaml',
      'monitoring/rules.yml',
      'watches.yaml',
    ]);
    assert.ok(filesUnder(join(dir, 'charts/webapp')).includes('values.schema.json'));
    assert.match(readFileSync(join(dir, 'Dockerfile'), 'utf8'), /^FROM chartpilot:\d+\.\d+\.\d+\nCOPY watches\.yaml \/opt\/chartpilot\/watches\.yaml\nCOPY charts\/ \/opt\/chartpilot\/charts\/$/mu);
    const loaded = await loadWatches(join(dir, 'watches.yaml'), {});
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.problems.join('\n'));

    deleteAfter(t, cluster, ['-k', join(dir, 'deploy')]);
    // The develop loop as a user starts it: `make install` puts the namespace and the CRD in the cluster.
    const installed = await execa('make', ['install'], { cwd: dir, env: { ...cluster.env, MAKEFLAGS: '' }, reject: false });
    assert.equal(installed.exitCode, 0, `${installed.stdout}\n${installed.stderr}`);
    assert.equal((await cluster.kubectl(['get', 'crd', `shops.${group}`], { allowFail: true })).exitCode, 0, 'make install applied the CRD');
    const applied = await cluster.kubectl(['apply', '-k', join(dir, 'deploy')], { allowFail: true });
    assert.equal(applied.exitCode, 0, applied.stderr);
    await established(cluster, `shops.${group}`);
    const sample = await cluster.kubectl(['apply', '-n', `${name}-system`, '-f', join(dir, 'deploy/samples')], { allowFail: true });
    assert.equal(sample.exitCode, 0, sample.stderr);
    await cluster.kubectl(['get', 'deployment', name, '-n', `${name}-system`]);
    await cluster.kubectl(['get', 'service', `${name}-metrics-service`, '-n', `${name}-system`]);
    await cluster.kubectl(['get', `clusterrolebinding/${name}-metrics-auth`, `clusterrole/${name}-metrics-reader`]);
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    assert.match(readme, new RegExp(`--clusterrole=${name}-metrics-reader `));
    assert.match(readme, new RegExp(`service/${name}-metrics-service 8443`));

    const again = await newCommand([dir, '--chart', join(REPO_ROOT, 'charts/webapp'), '--group', group, '--version', 'v1alpha1', '--kind', 'Shop'], {
      stdout: () => undefined,
      stderr: () => undefined,
      env: cluster.env,
    });
    assert.equal(again, 2, 'a second run refuses the now non-empty directory');
  });
});
