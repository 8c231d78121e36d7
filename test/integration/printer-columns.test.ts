/**
 * `kubectl get` tells a failed, foreign, stalled or progressing CR from a healthy one: the printer
 * columns `chartpilot generate crd` writes, over the summary the operator writes, printed by the
 * real kubectl from the real API server — for a chart kind and an Ansible kind of one operator.
 * With columns on Ready alone a failed install showed blank, a foreign record and a failed upgrade
 * over a Ready release `True AllResourcesReady`. The same CRs as GitOps tools see them: Argo CD's
 * health check (generate argocd), kstatus (Reconciling/Stalled, as Flux's wait and Helm 4's --wait
 * compute it) and `kubectl wait --for=condition=Ready`.
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
import { condition, crsOf, type Cr, type Crs } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import { newNamespace, testCluster } from './harness.js';
import { kstatusOf, recordVersions, type CrVersion, type Kstatus } from './kstatus.js';
import { kubectlTable, rowOf } from './kubectl-table.js';
import { startOperator } from './operator.js';
import { waitFor } from './wait.js';

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

    // Every version of each CR, from its creation on: what kstatus said at each write.
    const chartVersions = recordVersions(t, cluster, resourceOf(CHART_KIND), ns, `${CHART_KIND.group}/${CHART_KIND.version}`, CHART_KIND.kind);
    const roleVersions = recordVersions(t, cluster, resourceOf(ROLE_KIND), ns, `${ROLE_KIND.group}/${ROLE_KIND.version}`, ROLE_KIND.kind);

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

    // kstatus. Failures are retried with backoff; after 5 in a row (--stall-after-failures) the CR is
    // Stalled: kstatus Failed, whatever Ready still says. A retry runs as Reconciling (InProgress).
    for (const [crs, name] of [[web, 'broken'], [web, 'upgraded'], [role, 'refused']] as const) {
      await crs.until(name, 'Stalled after 5 failed attempts', (cr) => condition(cr, 'Stalled')?.reason === 'RetriesExhausted', 180_000);
    }
    const kstatusNow = async (crs: Crs, name: string): Promise<Kstatus | undefined> => (await kstatusOf([await crs.get(name)]))[0];
    const kstatusWant: [Crs, string, string][] = [
      [web, 'ready', 'Current'], [web, 'upgraded', 'Failed'], [web, 'rolling', 'InProgress'], [web, 'stalled', 'Failed'],
      [web, 'broken', 'Failed'], [web, 'foreign', 'Failed'], [web, 'paused', 'Current'], [web, LONG_NAME, 'Failed'],
      [role, 'ran', 'Current'], [role, 'refused', 'Failed'], [role, 'misread', 'Failed'],
    ];
    for (const [crs, name, status] of kstatusWant) {
      // Polled: a retry of a stalled CR is InProgress while it runs (seconds in each backoff interval).
      await waitFor(`kstatus of ${name} is ${status}`, async () => ((await kstatusNow(crs, name))?.status === status ? true : undefined), { timeoutMs: 60_000 });
    }
    assert.match((await kstatusNow(web, 'broken'))?.message ?? '', /^\d+ attempts in a row failed .*helm install failed: .*explode is set/u);
    assert.match((await kstatusNow(web, 'rolling'))?.message ?? '', /^Deployment rolling: /u);

    // What kstatus said at each write of the failing install, as a tool waiting on it saw them:
    // InProgress from the operator's first write (announced before helm ran), through the retries,
    // never Current. (Before any status, kstatus calls every CR Current: it cannot tell a kind that
    // writes none; no operator can change that.)
    const reported = (rec: { versions: Map<string, CrVersion[]> }, name: string): CrVersion[] => (rec.versions.get(name) ?? []).filter((v) => v.status !== undefined);
    const seen = async (versions: readonly CrVersion[]): Promise<string[]> => (await kstatusOf(versions)).map((k) => k.status ?? k.error ?? '');
    const broken = await seen(reported(chartVersions, 'broken'));
    t.diagnostic(`kstatus of broken at each version: ${broken.join(' ')}`);
    assert.ok(!broken.includes('Current'), broken.join(' '));
    const brokenReasons = reported(chartVersions, 'broken').map((v) => reconcilingReason(v.status));
    assert.equal(brokenReasons[0], 'Installing', 'the first word is the install announced');
    assert.ok(brokenReasons.includes('RetryingAfterFailure'), brokenReasons.join(' '));
    assert.equal(broken.indexOf('Failed') > broken.indexOf('InProgress'), true, broken.join(' '));
    const ready = await seen(reported(chartVersions, 'ready'));
    assert.equal(ready.at(-1), 'Current');
    assert.equal(ready[0], 'InProgress', `installing was InProgress: ${ready.join(' ')}`);
    // Argo CD alike: the install announced, nothing reported yet, is Progressing.
    assert.deepEqual(await runHealth(argocd.stdout, CHART_KIND, reported(chartVersions, 'ready').slice(0, 1)), [{ status: 'Progressing', message: 'waiting for chartpilot to report on this resource' }]);
    const refused = await seen(reported(roleVersions, 'refused'));
    assert.ok(refused.includes('InProgress') && refused.includes('Failed') && !refused.includes('Current'), refused.join(' '));
    const ranReasons = reported(roleVersions, 'ran').map((v) => reconcilingReason(v.status));
    assert.ok(ranReasons.includes('Running'), `the run was announced: ${ranReasons.join(' ')}`);

    // kubectl wait: ends at once on a Ready CR, times out on one whose objects never become ready.
    await cluster.kubectl(['wait', '--for=condition=Ready', `${resourceOf(CHART_KIND)}/ready`, '-n', ns, '--timeout=30s']);
    await assert.rejects(cluster.kubectl(['wait', '--for=condition=Ready', `${resourceOf(CHART_KIND)}/rolling`, '-n', ns, '--timeout=2s']), /timed out/u);

    // Being deleted: Terminating, from the deletion on (kstatus reads nothing else then).
    await web.delete('ready');
    await web.gone('ready');
    const deleting = reported(chartVersions, 'ready').filter((v) => v.metadata.deletionTimestamp !== undefined);
    assert.ok(deleting.length > 0, 'the watch saw the CR being deleted');
    assert.deepEqual([...new Set(await seen(deleting))], ['Terminating']);
    assert.ok(deleting.some((v) => reconcilingReason(v.status) === 'Uninstalling'), 'the uninstall was announced');
  });
});

/** The reason of a status's Reconciling condition, '-' without one. */
function reconcilingReason(status: unknown): string {
  const conditions = (status as { conditions?: { type: string; status: string; reason: string }[] } | undefined)?.conditions ?? [];
  return conditions.find((c) => c.type === 'Reconciling' && c.status === 'True')?.reason ?? '-';
}

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
