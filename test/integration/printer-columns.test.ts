/**
 * `kubectl get` tells a failed, foreign, stalled or progressing CR from a healthy one: the printer
 * columns `chartpilot generate crd` writes, over the summary the operator writes, printed by the
 * real kubectl from the real API server — for a chart kind and an Ansible kind of one operator.
 * With columns on Ready alone a failed install showed blank, a foreign record and a failed upgrade
 * over a Ready release `True AllResourcesReady`.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { parse, stringify } from 'yaml';
import { provision } from '../../devcluster/provision.js';
import { established, resourceOf, testKind } from './crd.js';
import { crsOf, type Cr, type Crs } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import { newNamespace, testCluster } from './harness.js';
import { kubectlTable, rowOf } from './kubectl-table.js';
import { startOperator } from './operator.js';

const CHART_KIND = testKind('Shown');
const ROLE_KIND = testKind('ShownPlay');
/** Longer than the 53 characters Helm allows a release name: the CR can never be installed. */
const LONG_NAME = `stalled-${'x'.repeat(50)}`;

/** Fails when the spec says explode, else makes a ConfigMap (which is ready once it exists). */
const ROLE_TASKS = `- name: refuse when the spec asks to
  ansible.builtin.fail:
    msg: asked to fail by spec.explode
  when: explode | default(false) | bool
- name: the configmap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-shown"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        shown: "yes"
`;

interface Summary {
  state?: string;
  reason?: string;
  message?: string;
}

const summaryOf = (cr: Cr): Summary | undefined => (cr.status as { chartpilot?: { summary?: Summary } } | undefined)?.chartpilot?.summary;
const inState = (state: string, reason?: string) => (cr: Cr): boolean => summaryOf(cr)?.state === state && (reason === undefined || summaryOf(cr)?.reason === reason);

describe('kubectl get shows what state each CR is in', { timeout: 600_000 }, () => {
  it('prints State, Reason and Message for ready, progressing, stalled, failed, foreign and paused CRs of both engines', async (t) => {
    const cluster = await testCluster();
    const ns = await newNamespace(t, 'shown');
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-shown-'));
    const chart = join(dir, 'charts', 'states');
    cpSync(fixtureChart('states'), chart, { recursive: true });
    mkdirSync(join(dir, 'roles', 'shown', 'tasks'), { recursive: true });
    writeFileSync(join(dir, 'roles', 'shown', 'tasks', 'main.yml'), ROLE_TASKS);
    const entry = (k: typeof CHART_KIND): Record<string, string> => ({ group: k.group, version: k.version, kind: k.kind });
    writeFileSync(join(dir, 'watches.yaml'), stringify([{ ...entry(CHART_KIND), chart }, { ...entry(ROLE_KIND), role: join(dir, 'roles', 'shown') }]));

    // The CRDs exactly as `chartpilot generate crd` writes them.
    const generated = await execa(process.execPath, [BIN, 'generate', 'crd', '--watches-file', join(dir, 'watches.yaml')], { env: cluster.env, extendEnv: false, stdin: 'ignore' });
    writeFileSync(join(dir, 'crds.yaml'), generated.stdout);
    await cluster.kubectl(['apply', '-f', join(dir, 'crds.yaml')]);
    for (const k of [CHART_KIND, ROLE_KIND]) await established(cluster, resourceOf(k));

    // A release of the name helm made by itself: its record is not chartpilot's.
    await cluster.helm(['install', 'foreign', chart, '-n', ns]);

    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir, args: ['--proxy-port', '0'] });
    const web: Crs = crsOf(cluster, CHART_KIND, ns, op);
    const role: Crs = crsOf(cluster, ROLE_KIND, ns, op);
    const unschedulable = { deployment: true, nodeSelector: { 'chartpilot.io/no-such-node': 'true' } };

    await web.apply('ready', {});
    await web.apply('upgraded', {});
    await web.apply('rolling', unschedulable);
    await web.apply('stalled', { ...unschedulable, progressDeadlineSeconds: 1 });
    await web.apply('broken', { explode: true });
    await web.apply('foreign', {});
    await web.apply('paused', {}, { 'helm.sdk.operatorframework.io/pause-reconcile': 'true' });
    await web.apply(LONG_NAME, {});
    await role.apply('ran', {});
    await role.apply('refused', { explode: true });
    await role.apply('misread', {}, { 'ansible.sdk.operatorframework.io/verbosity': 'loud' });

    await web.until('upgraded', 'Ready', inState('Ready'));
    await web.apply('upgraded', { explode: true });

    await web.until('ready', 'Ready', inState('Ready', 'AllResourcesReady'));
    await web.until('upgraded', 'Failed after an upgrade', inState('Failed', 'UpgradeError'));
    await web.until('rolling', 'Progressing', inState('Progressing', 'DeploymentNotAvailable'));
    await web.until('stalled', 'Stalled', inState('Stalled', 'ProgressDeadlineExceeded'), 120_000);
    await web.until('broken', 'Failed to install', inState('Failed', 'InstallError'));
    await web.until('foreign', 'Foreign', inState('Foreign', 'ForeignReleaseRecord'));
    await web.until('paused', 'Paused', inState('Paused'));
    await web.until(LONG_NAME, 'Stalled by its name', inState('Stalled', 'ReconcileError'));
    await role.until('ran', 'Ready', inState('Ready', 'AllResourcesReady'), 180_000);
    await role.until('refused', 'Failed', inState('Failed', 'Failed'), 180_000);
    await role.until('misread', 'Stalled', inState('Stalled', 'InvalidAnnotation'));

    // What a person sees: one table each, as the real kubectl prints it.
    const charts = await kubectlTable(cluster, resourceOf(CHART_KIND), ns);
    t.diagnostic(charts.text);
    assert.deepEqual(charts.headers, ['NAME', 'STATE', 'REASON', 'REVISION', 'CHART', 'AGE', 'MESSAGE'], charts.text);
    const expected: [string, string, string, RegExp][] = [
      ['ready', 'Ready', 'AllResourcesReady', /^all 1 resource is ready$/u],
      ['upgraded', 'Failed', 'UpgradeError', /^helm upgrade failed: .*states refuses to render: explode is set/u],
      ['rolling', 'Progressing', 'DeploymentNotAvailable', /^Deployment rolling: /u],
      ['stalled', 'Stalled', 'ProgressDeadlineExceeded', /^Deployment stalled: progress deadline exceeded/u],
      ['broken', 'Failed', 'InstallError', /^helm install failed: .*states refuses to render: explode is set/u],
      ['foreign', 'Foreign', 'ForeignReleaseRecord', /^Helm release record sh\.helm\.release\.v1\.foreign\.v1 was not written by chartpilot/u],
      ['paused', 'Paused', 'ReconcilePaused', /pause-reconcile/u],
      [LONG_NAME, 'Stalled', 'ReconcileError', /Helm release names/u],
    ];
    for (const [name, state, reason, message] of expected) {
      const row = rowOf(charts, name);
      assert.deepEqual([row['STATE'], row['REASON']], [state, reason], `${name}:\n${charts.text}`);
      assert.match(row['MESSAGE'] ?? '', message, `${name}:\n${charts.text}`);
    }
    assert.equal(rowOf(charts, 'upgraded')['REVISION'], '1', 'the failed upgrade left revision 1 deployed');
    assert.equal(rowOf(charts, 'ready')['CHART'], 'states');

    // -o wide adds Ready: still True for the revision the failed upgrade left, as operator-sdk's condition says.
    const wide = await kubectlTable(cluster, resourceOf(CHART_KIND), ns, true);
    assert.deepEqual([rowOf(wide, 'upgraded')['STATE'], rowOf(wide, 'upgraded')['READY']], ['Failed', 'True'], wide.text);

    const roles = await kubectlTable(cluster, resourceOf(ROLE_KIND), ns);
    t.diagnostic(roles.text);
    assert.deepEqual(roles.headers, ['NAME', 'STATE', 'REASON', 'AGE', 'MESSAGE'], roles.text);
    for (const [name, state, reason] of [['ran', 'Ready', 'AllResourcesReady'], ['refused', 'Failed', 'Failed'], ['misread', 'Stalled', 'InvalidAnnotation']] as const) {
      const row = rowOf(roles, name);
      assert.deepEqual([row['STATE'], row['REASON']], [state, reason], `${name}:\n${roles.text}`);
      assert.notEqual(row['MESSAGE'], '', `${name} has a message:\n${roles.text}`);
    }
    assert.match(rowOf(roles, 'misread')['MESSAGE'] ?? '', /verbosity/u, roles.text);

    // What an Argo CD user sees: `chartpilot generate argocd`'s health check, run as Argo CD's
    // controller runs it (gopher-lua, argocd-cm's libraries), over the same CRs as the API server returns them.
    const argocd = await execa(process.execPath, [BIN, 'generate', 'argocd', '--watches-file', join(dir, 'watches.yaml')], { env: cluster.env, extendEnv: false, stdin: 'ignore' });
    const health = await argocdHealth(argocd.stdout, [
      ...expected.map(([name]) => name).map((name) => ({ kind: CHART_KIND, name })),
      ...['ran', 'refused', 'misread'].map((name) => ({ kind: ROLE_KIND, name })),
    ].map(({ kind, name }) => ({ kind, name, ns })));
    const want: Record<string, string> = {
      ready: 'Healthy', upgraded: 'Degraded', rolling: 'Progressing', stalled: 'Degraded', broken: 'Degraded',
      foreign: 'Degraded', paused: 'Suspended', [LONG_NAME]: 'Degraded', ran: 'Healthy', refused: 'Degraded', misread: 'Degraded',
    };
    for (const [name, status] of Object.entries(want)) assert.equal(health.get(name)?.status, status, `${name}: ${JSON.stringify(health.get(name))}`);
    assert.match(health.get('upgraded')?.message ?? '', /^Failed \(UpgradeError\): helm upgrade failed/u);

    // A spec change the operator has not acted on yet is Progressing, whatever the last verdict:
    // the Ready CR as the API server returns it right after such a change (generation one ahead).
    const ahead = JSON.parse((await cluster.kubectl(['get', `${resourceOf(CHART_KIND)}/ready`, '-n', ns, '-o', 'json'])).stdout) as { metadata: { generation: number }; status: { observedGeneration: number } };
    assert.equal(ahead.status.observedGeneration, ahead.metadata.generation);
    ahead.metadata.generation += 1;
    const [changed] = await runHealth(argocd.stdout, CHART_KIND, [ahead]);
    assert.deepEqual(changed, { status: 'Progressing', message: `chartpilot has not acted on generation ${ahead.metadata.generation} yet (observed ${ahead.status.observedGeneration})` });
    // A status of the wrong shape (anyone may write it where a CRD has no status subresource) is no
    // verdict and no script error.
    const misshapen = await runHealth(argocd.stdout, CHART_KIND, [
      { metadata: { generation: 'two' }, status: { observedGeneration: [1], chartpilot: { summary: { state: { nested: true }, reason: 7, message: ['x'] } } } },
      { metadata: [], status: { chartpilot: 'Ready' } },
      { status: [] },
      { metadata: { generation: 1 }, status: { observedGeneration: 1, chartpilot: { summary: { state: 'Ready', reason: { no: 1 }, message: 3 } } } },
    ]);
    assert.deepEqual(misshapen, [
      { status: 'Progressing', message: 'waiting for chartpilot to report on this resource' },
      { status: 'Progressing', message: 'waiting for chartpilot to report on this resource' },
      { status: 'Progressing', message: 'waiting for chartpilot to report on this resource' },
      { status: 'Healthy', message: 'Ready: ' },
    ]);
  });
});

type Health = { status?: string; message?: string; error?: string };

/** The health check argocd-cm (as generated) holds for `kind`, run by devcluster/argocd-health over `objects`. */
async function runHealth(configMapYaml: string, kind: typeof CHART_KIND, objects: readonly unknown[]): Promise<Health[]> {
  const data = (parse(configMapYaml) as { data: Record<string, string> }).data;
  const script = data[`resource.customizations.health.${kind.group}_${kind.kind}`];
  assert.ok(script !== undefined, `argocd-cm has a health check for ${kind.kind}: ${Object.keys(data).join(', ')}`);
  const bin = realpathSync(join(await provision({ components: ['argocd-health'] }), 'argocd-health'));
  const file = join(mkdtempSync(join(tmpdir(), 'chartpilot-argocd-')), `${kind.kind}.lua`);
  writeFileSync(file, script);
  const r = await execa(bin, [file], { input: JSON.stringify(objects) });
  const results = JSON.parse(r.stdout) as Health[];
  assert.equal(results.length, objects.length, r.stdout);
  return results;
}

/** The health of live CRs, by name, as Argo CD would judge them with the generated check. */
async function argocdHealth(configMapYaml: string, crs: readonly { kind: typeof CHART_KIND; name: string; ns: string }[]): Promise<Map<string, Health>> {
  const cluster = await testCluster();
  const out = new Map<string, Health>();
  for (const kind of [CHART_KIND, ROLE_KIND]) {
    const mine = crs.filter((c) => c.kind === kind);
    if (mine.length === 0) continue;
    const objects = await Promise.all(mine.map(async (c) => JSON.parse((await cluster.kubectl(['get', `${resourceOf(kind)}/${c.name}`, '-n', c.ns, '-o', 'json'])).stdout) as unknown));
    const results = await runHealth(configMapYaml, kind, objects);
    mine.forEach((c, i) => out.set(c.name, results[i] ?? { error: 'no result' }));
  }
  return out;
}
