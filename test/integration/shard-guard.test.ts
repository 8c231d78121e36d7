/**
 * A CR author can write the shard labels of their CR; they must not be able to steer the ring.
 * On the real control plane with the real helm: a CR relabelled to another replica (and then
 * unlabelled) while its owner's helm call hangs is never acted on by that replica — its helm call
 * log never overlaps the owner's on the release, it never even plans a reconcile — the label is set
 * back and the CR converges. During a ring change, a CR relabelled straight to its new owner while
 * the old one's call still runs waits until that call ended (without the claims in the Leases the
 * new owner plans an unlock of the live call's lock at once). And `generate deploy --shards`'s ValidatingAdmissionPolicy refuses a
 * tenant's change of the labels with a message naming the fix, while the operator's identity may.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { resourceOf } from './crd.js';
import { condition, crsOf, type Cr } from './crs.js';
import { pickOf } from '../../src/controller/sharding/guard.js';
import { BIN, fixtureChart } from './fixtures.js';
import type { RunningOperator } from './operator.js';
import { setUp, type Setup } from './scenario.js';
import { overlaps, timedHelm, type HelmCall } from './timed-helm.js';
import { waitFor } from './wait.js';

const RING = 'guard';
const LABEL = `shard.chartpilot.io/${RING}`;
const LEASE_S = 3;

interface Replica {
  readonly name: string;
  readonly op: RunningOperator;
  readonly calls: () => HelmCall[];
}

async function startReplica(s: Setup, dir: string, name: string, extra: string[] = []): Promise<Replica> {
  const helm = timedHelm(s.cluster, dir, name);
  const args = [...extra, '--helm-mode=cli', '--shards', '--leader-election-id', RING, '--leader-election-namespace', s.ns, '--shard-lease-duration', `${String(LEASE_S)}s`, '--reconcile-period', '0', '--helm-timeout', '40s', '--log-level', 'debug'];
  const op = await s.start({ args, env: { HELM_BIN: helm.bin, POD_NAME: name, POD_NAMESPACE: s.ns }, noWait: true });
  await waitFor(`${name} joined`, () => Promise.resolve(op.logs().includes('controller started')), { timeoutMs: 60_000, intervalMs: 100 });
  return { name, op, calls: helm.calls };
}

/** Log lines of `op` about the CR `name` (JSON lines carrying its name). */
function linesAbout(op: RunningOperator, name: string): string[] {
  return op.logs().split('\n').filter((l) => l.includes(`"name":"${name}"`));
}

describe('shard labels a CR author writes', () => {
  it('a CR moved to another replica mid-helm-call is never acted on there; the label is set back and the CR converges', { timeout: 5 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'ShardGuard', chart: fixtureChart('stoppable-hook') });
    const { cluster, ns, kind } = s;
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-shard-guard-'));
    const replicas = [await startReplica(s, dir, 'a'), await startReplica(s, dir, 'b')];
    const cr = crsOf(cluster, kind, ns);
    // Its pre-install hook never completes: the owner's helm call hangs (until --helm-timeout).
    await cr.apply('web', { stuck: true });
    const labelOf = async (): Promise<string | undefined> => (await cr.get('web'))?.metadata.labels?.[LABEL];
    const owner = await waitFor('web assigned', labelOf, { timeoutMs: 60_000, intervalMs: 100 });
    const [x, y] = (owner === 'a' ? replicas : [...replicas].reverse()) as [Replica, Replica];
    const openCall = (): HelmCall | undefined => x.calls().find((c) => c.release === 'web' && c.verb === 'upgrade' && c.end === undefined);
    await waitFor(`${x.name}'s helm call on web running`, () => Promise.resolve(openCall()), { timeoutMs: 60_000, intervalMs: 100 });
    const call = openCall();

    // The tenant moves the CR to the other replica: no drain, no acknowledgement.
    const movedAt = Date.now();
    await cluster.kubectl(['label', '--overwrite', resourceOf(kind), 'web', '-n', ns, `${LABEL}=${y.name}`]);
    await waitFor(`${y.name} sees web and refuses it`, () => Promise.resolve(linesAbout(y.op, 'web').some((l) => l.includes('"reason":"not-the-ring"')) || undefined), { timeoutMs: 30_000, intervalMs: 100 });
    const restoredAfterMs = await waitFor('the label set back', async () => ((await labelOf()) === x.name ? Date.now() - movedAt : undefined), { timeoutMs: 30_000, intervalMs: 100 });
    t.diagnostic(`relabelled to ${y.name}: set back to ${x.name} after ${String(restoredAfterMs)} ms`);
    // Then removes the label: the sharder gives the CR back to its owner, still nobody else.
    await cluster.kubectl(['label', resourceOf(kind), 'web', '-n', ns, `${LABEL}-`]);
    await waitFor('the label set back again', async () => ((await labelOf()) === x.name) || undefined, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(openCall()?.start, call?.start, `${x.name}'s helm call was still running throughout`);

    // The fix: once the hanging call ends, the owner deploys it.
    await cr.apply('web', { stuck: false });
    await cr.until('web', 'Deployed', (c: Cr) => condition(c, 'Deployed')?.status === 'True' && c.metadata.generation === c.status?.observedGeneration, 180_000);
    assert.equal(await labelOf(), x.name);
    const calls = replicas.flatMap((r) => r.calls());
    assert.deepEqual(overlaps(calls), [], 'no two replicas\' helm calls overlap on the release');
    assert.deepEqual(y.calls().filter((c) => c.release === 'web'), [], `${y.name} ran no helm call on web`);
    assert.deepEqual(linesAbout(y.op, 'web').filter((l) => l.includes('"msg":"planned"')), [], `${y.name} never reconciled web`);
  });

  it('during a ring change, a CR still reconciled by its old owner and relabelled to its new one waits for the old owner\'s call to end', { timeout: 5 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'ShardGuardMove', chart: fixtureChart('stoppable-hook') });
    const { cluster, ns, kind } = s;
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-shard-guard-'));
    const concurrency = ['--max-concurrent-reconciles', '8'];
    const a = await startReplica(s, dir, 'a', concurrency);
    const cr = crsOf(cluster, kind, ns);
    const movesToB = new Set<string>();
    // CRs until one that the ring of a and b gives to b (by its uid, as the replicas compute it).
    const names: string[] = [];
    for (let i = 0; i < 30 && !names.some((n) => movesToB.has(n)); i++) {
      const n = `m${String(i)}`;
      await cr.apply(n, { stuck: true });
      const uid = (await cr.get(n))?.metadata.uid ?? '';
      names.push(n);
      if (pickOf(['a', 'b'], uid) === 'b') movesToB.add(n);
    }
    const name = names.find((n) => movesToB.has(n));
    assert.ok(name !== undefined, 'a CR the ring of a and b gives to b');
    const openCall = (release: string): HelmCall | undefined => a.calls().find((c) => c.release === release && c.verb === 'upgrade' && c.end === undefined);
    await waitFor(`a's helm call on ${name} running`, () => Promise.resolve(openCall(name)), { timeoutMs: 60_000, intervalMs: 200 });

    // b joins: the ring now gives b that CR, so the sharder asks a to let go; a waits for its call first.
    const b = await startReplica(s, dir, 'b', concurrency);
    await waitFor(`${name} asked to move to b`, async () => (await cr.get(name))?.metadata.labels?.[`drain.${LABEL}`] ?? undefined, { timeoutMs: 30_000, intervalMs: 100 });
    const call = openCall(name);
    assert.ok(call !== undefined, `a's call on ${name} still runs`);
    // The tenant does not wait for the drain: the CR goes straight to b (its new owner in the ring).
    await cluster.kubectl(['label', '--overwrite', resourceOf(kind), name, '-n', ns, `${LABEL}=b`, `drain.${LABEL}-`]);
    await waitFor(`b looks at ${name}`, () => Promise.resolve(linesAbout(b.op, name).some((l) => l.includes('"reason":"claimed"') || l.includes('"msg":"planned"')) || undefined), { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(openCall(name)?.start, call.start, `a's call on ${name} still runs`);
    assert.deepEqual(linesAbout(b.op, name).filter((l) => l.includes('"msg":"planned"')), [], `b did not reconcile ${name} while a's call ran`);
    assert.ok(linesAbout(b.op, name).some((l) => l.includes('"reason":"claimed"')), `b waits: a's Lease claims ${name}`);

    // The calls end (--helm-timeout); b then takes the CR and deploys the fixed spec.
    await cr.apply(name, { stuck: false });
    await cr.until(name, 'Deployed', (c: Cr) => condition(c, 'Deployed')?.status === 'True' && c.metadata.generation === c.status?.observedGeneration, 180_000);
    const ended = a.calls().find((c) => c.release === name && c.start === call.start)?.end;
    assert.ok(ended !== undefined, `a's call on ${name} ended`);
    const firstPlan = linesAbout(b.op, name).find((l) => l.includes('"msg":"planned"'));
    assert.ok(firstPlan !== undefined, `b reconciled ${name} in the end`);
    const plannedAt = Date.parse((JSON.parse(firstPlan) as { time: string }).time);
    t.diagnostic(`${name}: a's call ended at +${String(ended - call.start)} ms, b's first reconcile at +${String(plannedAt - call.start)} ms`);
    assert.ok(plannedAt >= ended, 'b reconciled only after a\'s call ended');
    assert.deepEqual(overlaps([...a.calls(), ...b.calls()]), [], 'no two replicas\' helm calls overlap on a release');
  });

  it('generate deploy --shards: a tenant may not change the shard labels; the operator may', { timeout: 2 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'ShardPolicy', chart: fixtureChart('tiny') });
    const { cluster, ns, kind } = s;
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-shard-policy-'));
    const watches = join(dir, 'watches.yaml');
    writeFileSync(watches, `- group: ${kind.group}\n  version: ${kind.version}\n  kind: ${kind.kind}\n  chart: ${fixtureChart('tiny')}\n`);
    // The ring is named after the operator: one of this test's own, so no other test's labels are guarded.
    const name = `pol${ns.replace(/[^a-z0-9]/gu, '').slice(-20)}`;
    const out = await execa('node', [BIN, 'generate', 'deploy', '--shards', '2', '--name', name, '--namespace', ns, '--service-account', 'operator', '--watches-file', watches]);
    const policy = parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as { kind: string })
      .filter((d) => d.kind === 'ValidatingAdmissionPolicy' || d.kind === 'ValidatingAdmissionPolicyBinding');
    assert.equal(policy.length, 2, out.stdout);
    t.after(async () => {
      await cluster.kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', `${name}-shard-labels`, '--ignore-not-found'], { allowFail: true });
    });
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: policy }) });
    const label = `shard.chartpilot.io/${name}`;
    const drain = `drain.shard.chartpilot.io/${name}`;
    // A tenant who may edit the kind, and the operator's ServiceAccount.
    for (const sa of ['tenant', 'operator']) await cluster.kubectl(['create', 'serviceaccount', sa, '-n', ns]);
    await cluster.kubectl(['create', 'role', 'editor', '-n', ns, '--verb=get,list,create,update,patch', `--resource=${resourceOf(kind)}`]);
    await cluster.kubectl(['create', 'rolebinding', 'editor', '-n', ns, '--role=editor', `--serviceaccount=${ns}:tenant`, `--serviceaccount=${ns}:operator`]);
    const as = (who: string, args: string[]) => cluster.kubectl([...args, '-n', ns, '--as', `system:serviceaccount:${ns}:${who}`], { allowFail: true });
    const res = resourceOf(kind);
    const manifest = (labels: Record<string, string>) => JSON.stringify({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'web', namespace: ns, labels }, spec: {} });

    // The policy takes effect within a few seconds of being applied (probed without storing anything).
    const create = (who: string, labels: Record<string, string>, dryRun = false) =>
      cluster.kubectl(['create', '-f', '-', '--as', `system:serviceaccount:${ns}:${who}`, ...(dryRun ? ['--dry-run=server'] : [])], { input: manifest(labels), allowFail: true });
    await waitFor('the policy in effect', async () => (await create('tenant', { [label]: 'b' }, true)).stderr.includes('ValidatingAdmissionPolicy') || undefined, { timeoutMs: 30_000, intervalMs: 500 });
    const forged = await create('tenant', { [label]: 'b' });
    assert.notEqual(forged.exitCode, 0, 'a tenant may not create a resource with a shard label');
    const refused = forged.stderr;
    t.diagnostic(refused.trim());
    assert.match(refused, new RegExp(`${label.replace(/\./gu, '\\.')} and ${drain.replace(/\./gu, '\\.')} say which replica of the operator ${ns}/${name} acts on this resource: only its ServiceAccount system:serviceaccount:${ns}:operator may set, change or remove them`));
    // Without the labels the tenant creates and edits freely.
    const plain = await create('tenant', { team: 'a' });
    assert.equal(plain.exitCode, 0, plain.stderr);
    assert.equal((await as('tenant', ['label', res, 'web', 'tier=gold'])).exitCode, 0);
    // The operator's identity assigns, as the sharder does; the tenant may neither change, drain nor remove.
    assert.equal((await as('operator', ['label', res, 'web', `${label}=a`])).exitCode, 0);
    for (const change of [[`${label}=b`, '--overwrite'], [`${drain}=true`], [`${label}-`]]) {
      const r = await as('tenant', ['label', res, 'web', ...change]);
      t.diagnostic(`tenant: label ${change.join(' ')}: ${r.stderr.trim().slice(0, 120)}`);
      assert.notEqual(r.exitCode, 0, `tenant: label ${change.join(' ')}`);
      assert.match(r.stderr, /only its ServiceAccount .* may set, change or remove them/);
    }
    assert.equal((await as('tenant', ['label', res, 'web', 'tier=silver', '--overwrite'])).exitCode, 0, 'other labels stay the tenant\'s');
    assert.equal((await as('operator', ['label', res, 'web', `${drain}=true`])).exitCode, 0);
    assert.equal((await as('operator', ['label', res, 'web', `${label}-`, `${drain}-`])).exitCode, 0);
    const labels = (await cluster.kubectl(['get', res, 'web', '-n', ns, '-o', 'jsonpath={.metadata.labels}'])).stdout;
    assert.deepEqual(JSON.parse(labels), { team: 'a', tier: 'silver' });
  });
});
