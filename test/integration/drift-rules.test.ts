/**
 * driftDetection on a real control plane: the kube-controller-manager's HPA controller (which
 * scales a Deployment up to minReplicas even without a metrics server) and a "CA injector" (a
 * kubectl patch under another field manager) own fields the chart also renders. Without a rule
 * the fight is told once and our writes stay bounded; with a rule the other owner's value stays
 * and nothing is written; warn tells and writes nothing; off writes nothing and tells readiness.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it, type TestContext } from 'node:test';
import { parse, stringify } from 'yaml';
import { condition } from './crs.js';
import { fixtureChart } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('drift-rules');

interface Deployment {
  metadata: { resourceVersion: string; managedFields?: { manager: string; operation: string; time?: string }[] };
  spec: { replicas: number };
}

interface RawEvent {
  reason: string;
  type: string;
  message: string;
  count?: number;
  series?: { count?: number };
}

async function getJson<T>(cluster: TestCluster, args: string[]): Promise<T> {
  return JSON.parse((await cluster.kubectl([...args, '-o', 'json', '--show-managed-fields'])).stdout) as T;
}

async function events(cluster: TestCluster, ns: string, name: string, reason: string): Promise<RawEvent[]> {
  const r = await cluster.kubectl(['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name},reason=${reason}`, '-o', 'json']);
  return (JSON.parse(r.stdout) as { items: RawEvent[] }).items;
}

/** How many times an event was emitted, counting the API's aggregation of repeats. */
function times(list: readonly RawEvent[]): number {
  return list.reduce((n, e) => n + Math.max(e.count ?? 1, e.series?.count ?? 1), 0);
}

/**
 * Every value `spec.replicas` of a Deployment takes, in order, as the API server's watch delivers
 * each change (nothing coalesced): who set it back is visible as a change to the chart's value.
 */
function watchReplicas(t: TestContext, cluster: TestCluster, ns: string, name: string): { values: number[] } {
  const seen = { values: [] as number[] };
  const child = spawn(cluster.kubectlBin, ['get', 'deployment', name, '-n', ns, '--watch', '-o', 'jsonpath={.spec.replicas}{"\\n"}'], { env: cluster.env });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') seen.values.push(Number(line.trim()));
  });
  t.after(() => {
    child.kill();
  });
  return seen;
}

/** Set-backs to `chartValue`: changes to it from another value (only chartpilot writes it). */
function setBacks(values: readonly number[], chartValue: number): number {
  let n = 0;
  for (let i = 1; i < values.length; i++) if (values[i] === chartValue && values[i - 1] !== chartValue) n++;
  return n;
}

async function addHpa(cluster: TestCluster, ns: string, deployment: string, minReplicas: number): Promise<void> {
  await cluster.kubectl(['apply', '-n', ns, '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: deployment },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment },
        minReplicas,
        maxReplicas: minReplicas + 1,
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }],
      },
    }),
  });
}

/**
 * Holds for `ms` (a few HPA sync periods, 15 s each): checks `ok` all along and fails at the first
 * breach. Proving that nothing happens needs a stretch of time; this is that stretch, observed.
 */
async function holds(what: string, ms: number, ok: () => Promise<string | undefined>): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const breach = await ok();
    if (breach !== undefined) assert.fail(`${what}: ${breach}`);
    await sleep(500);
  }
}

/** The time of our field manager's last apply to an object (changes with every write of ours). */
function helmApplyTime(o: Deployment | { metadata: Deployment['metadata'] }): string | undefined {
  return o.metadata.managedFields?.find((f) => f.manager === 'helm' && f.operation === 'Apply')?.time;
}

// Each case has its own kind, namespace and operator, and most of its time is spent waiting (the
// fight's rounds, a 40 s hold): they run side by side.
describe('driftDetection: fields others own', { concurrency: true }, () => {
  it('without a rule, a fight with an HPA is given up after bounded writes and told once; the rule it suggests, added by hot reload, settles it', async (t) => {
    const { cluster, ns, cr, op } = await operatorScenario(t, { kind: 'DriftFight', chart: CHART });
    await cr.apply('web', {});
    await cr.deployed('web');
    const watch = watchReplicas(t, cluster, ns, 'web');
    await waitFor('the replicas watch to start', () => Promise.resolve(watch.values.length > 0));
    await addHpa(cluster, ns, 'web', 3);

    const contested = await waitFor('one DriftContested warning', async () => {
      const found = await events(cluster, ns, 'web', 'DriftContested');
      return found.length > 0 ? found : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1_000 });
    const message = contested[0]?.message ?? '';
    assert.equal(contested[0]?.type, 'Warning');
    assert.match(message, /^Deployment web: spec\.replicas was set back 3 times in \d+s and changed again each time by "kube-controller-manager \(scale\)"/);
    assert.match(message, /driftDetection: \{ignore: \[\{paths: \["\/spec\/replicas"\], target: \{kind: Deployment\}\}\]\}$/);
    const drifted = await cr.until('web', 'Drifted=True (DriftContested)', (c) => condition(c, 'Drifted')?.reason === 'DriftContested');
    assert.equal(condition(drifted, 'Drifted')?.status, 'True');
    assert.match(condition(drifted, 'Drifted')?.message ?? '', /Deployment web spec\.replicas \("kube-controller-manager \(scale\)"\)/);

    // Given up: the HPA's value stays through several of its sync periods, and nothing more is written.
    await holds('the HPA keeps its replicas and we write no more', 40_000, async () => {
      const d = await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns]);
      return d.spec.replicas === 3 ? undefined : `replicas ${String(d.spec.replicas)}`;
    });
    assert.equal(setBacks(watch.values, 1), 3, `our set-backs (replicas seen: ${watch.values.join(' ')})`);
    assert.equal(times(await events(cluster, ns, 'web', 'DriftContested')), 1, 'told once');

    // The rule the warning names, added to the entry as written there: applied without a restart.
    const snippet = /(driftDetection: \{.*\})$/.exec(message)?.[1];
    assert.ok(snippet !== undefined);
    const entries = parse(readFileSync(op.watchesFile, 'utf8')) as Record<string, unknown>[];
    writeFileSync(op.watchesFile, stringify(entries.map((e) => ({ ...e, ...(parse(snippet) as Record<string, unknown>) }))));
    await cr.until('web', 'Drifted gone once the rule says whose the field is', (c) => condition(c, 'Drifted') === undefined);
    const d = await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns]);
    assert.equal(d.spec.replicas, 3);
    assert.equal(setBacks(watch.values, 1), 3, 'no write after the reload either');
  });

  it('with ignore rules, the HPA’s replicas and an injected caBundle stay and nothing is written; other drift in the same objects is still set back', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, {
      kind: 'DriftIgnore',
      chart: CHART,
      extra: {
        allowClusterScoped: true,
        driftDetection: {
          ignore: [
            { paths: ['/spec/replicas'], target: { kind: 'Deployment' } },
            { paths: ['/webhooks/0/clientConfig/caBundle'], target: { kind: 'ValidatingWebhookConfiguration', labelSelector: 'app.kubernetes.io/component=webhook' } },
          ],
        },
      },
    });
    const webhook = `${ns}-web`;
    t.after(async () => {
      await cluster.kubectl(['delete', 'validatingwebhookconfiguration', webhook, '--wait=false'], { allowFail: true });
    });
    await cr.apply('web', { webhook: true });
    await cr.deployed('web');
    const watch = watchReplicas(t, cluster, ns, 'web');
    await addHpa(cluster, ns, 'web', 3);
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n').toString('base64');
    await cluster.kubectl([
      'patch', 'validatingwebhookconfiguration', webhook, '--type=json', '--field-manager=cainjector',
      '-p', JSON.stringify([{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: ca }]),
    ]);
    await waitFor('the HPA to scale to 3', async () => (await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns])).spec.replicas === 3, { timeoutMs: 60_000 });
    const before = {
      deployment: helmApplyTime(await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns])),
      webhook: helmApplyTime(await getJson<Deployment>(cluster, ['get', 'validatingwebhookconfiguration', webhook])),
    };
    assert.ok(before.deployment !== undefined && before.webhook !== undefined, 'helm applied both');

    const caBundle = async (): Promise<string | undefined> =>
      (await getJson<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(cluster, ['get', 'validatingwebhookconfiguration', webhook])).webhooks[0]?.clientConfig.caBundle;
    await holds('the others’ values stay and we write nothing', 30_000, async () => {
      const d = await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns]);
      if (d.spec.replicas !== 3) return `replicas ${String(d.spec.replicas)}`;
      if ((await caBundle()) !== ca) return 'caBundle set back';
      if (helmApplyTime(d) !== before.deployment) return 'the Deployment was written';
      return undefined;
    });
    assert.equal(setBacks(watch.values, 1), 0);
    assert.equal((await events(cluster, ns, 'web', 'DriftRepaired')).length, 0);
    assert.equal(condition(await cr.get('web'), 'Drifted'), undefined, 'nothing left drifted: the rules say whose those fields are');

    // Drift the rules do not cover, in the same objects: set back, and the ignored fields stay.
    await cluster.kubectl(['set', 'image', 'deployment/web', '-n', ns, 'app=registry.example.com/app:2.0']);
    await cluster.kubectl([
      'patch', 'validatingwebhookconfiguration', webhook, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/timeoutSeconds', value: 9 }]),
    ]);
    await waitFor('image and timeout set back', async () => {
      const d = await getJson<{ spec: { replicas: number; template: { spec: { containers: { image: string }[] } } } }>(cluster, ['get', 'deployment', 'web', '-n', ns]);
      const w = await getJson<{ webhooks: { timeoutSeconds: number }[] }>(cluster, ['get', 'validatingwebhookconfiguration', webhook]);
      return d.spec.template.spec.containers[0]?.image === 'registry.example.com/app:1.0' && w.webhooks[0]?.timeoutSeconds === 5;
    }, { timeoutMs: 60_000 });
    const d = await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns]);
    assert.equal(d.spec.replicas, 3, 'the repair left replicas to the HPA');
    assert.equal(await caBundle(), ca, 'the repair left caBundle to the injector');
    assert.equal(setBacks(watch.values, 1), 0);
  });

  // docs/guides/drift.md's limit of the rules, on the real helm 4: they govern drift repair, not helm's own
  // server-side apply, which does not force conflicts.
  it('the ignore rule does not reach helm: a later upgrade still rendering replicas conflicts with the HPA, the rollback too, and the HPA keeps its value', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, {
      kind: 'DriftUpgrade',
      chart: CHART,
      extra: { driftDetection: { ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }] } },
    });
    await cr.apply('web', {});
    await cr.deployed('web');
    const watch = watchReplicas(t, cluster, ns, 'web');
    await addHpa(cluster, ns, 'web', 3);
    await waitFor('the HPA to scale to 3', async () => (await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns])).spec.replicas === 3, { timeoutMs: 60_000 });

    await cr.apply('web', { setting: 'changed' });
    const failed = await cr.until('web', 'ReleaseFailed=True', (c) => condition(c, 'ReleaseFailed')?.status === 'True', 120_000);
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'UpgradeError');
    assert.match(message, /^helm upgrade failed: .*conflict with "kube-controller-manager" with subresource "scale" using apps\/v1: \.spec\.replicas/);
    // … and what to do about it.
    assert.match(message, /\("kube-controller-manager \(scale\)" owns \.spec\.replicas, which the chart still renders: stop rendering it .* or annotate the resource helm\.sdk\.operatorframework\.io\/upgrade-force: "true"/);
    // chartpilot's remediation, a rollback to revision 1, renders replicas too and conflicts the same way.
    assert.match(message, /; cleaning up after it also failed: .*conflict with "kube-controller-manager"/);
    assert.equal(failed.status?.deployedRelease?.revision, 1, 'revision 1 is still the deployed one');
    await holds('the HPA keeps its replicas through the retries', 10_000, async () => {
      const d = await getJson<Deployment>(cluster, ['get', 'deployment', 'web', '-n', ns]);
      return d.spec.replicas === 3 ? undefined : `replicas ${String(d.spec.replicas)}`;
    });
    assert.equal(setBacks(watch.values, 1), 0, `replicas seen: ${watch.values.join(' ')}`);
  });

  it('warn tells drift (event and condition) and writes nothing; off writes nothing, tells nothing and still reports readiness', async (t) => {
    const { cluster, ns, crs: [warn, off] } = await operatorScenario(t, {
      namespace: 'drift-modes',
      watches: [
        { kind: 'DriftWarn', chart: CHART, extra: { driftDetection: { mode: 'warn' } } },
        { kind: 'DriftOff', chart: CHART, extra: { driftDetection: { mode: 'off' } } },
      ],
    });
    await warn.apply('w', {});
    await off.apply('o', {});
    await warn.deployed('w');
    await off.until('o', 'Deployed and Ready told', (c) => condition(c, 'Deployed')?.status === 'True' && condition(c, 'Ready') !== undefined);
    for (const name of ['w', 'o']) {
      await cluster.kubectl(['scale', 'deployment', name, '-n', ns, '--replicas=2']);
      await cluster.kubectl(['patch', 'configmap', `${name}-settings`, '-n', ns, '--type=merge', '-p', '{"data":{"setting":"by-hand"}}']);
    }
    const told = await warn.until('w', 'Drifted=True (DriftDetected)', (c) => condition(c, 'Drifted')?.reason === 'DriftDetected', 60_000);
    assert.match(condition(told, 'Drifted')?.message ?? '', /Deployment w \(spec\.replicas\)/);
    assert.match(condition(told, 'Drifted')?.message ?? '', /ConfigMap w-settings \(data\.setting\)/);
    const detected = await waitFor('a DriftDetected warning', async () => {
      const found = await events(cluster, ns, 'w', 'DriftDetected');
      return found.length > 0 ? found : undefined;
    });
    assert.match(detected[0]?.message ?? '', /not set back \(driftDetection mode warn\)/);

    await holds('nothing is set back in either mode', 20_000, async () => {
      for (const name of ['w', 'o']) {
        const d = await getJson<Deployment>(cluster, ['get', 'deployment', name, '-n', ns]);
        if (d.spec.replicas !== 2) return `${name}: replicas ${String(d.spec.replicas)}`;
        const cm = await getJson<{ data: { setting: string } }>(cluster, ['get', 'configmap', `${name}-settings`, '-n', ns]);
        if (cm.data.setting !== 'by-hand') return `${name}: the ConfigMap was set back`;
      }
      return undefined;
    });
    for (const name of ['w', 'o']) assert.equal((await events(cluster, ns, name, 'DriftRepaired')).length, 0, `${name}: no repair`);
    // Told when what differs changes (the Deployment, then also the ConfigMap), not on every pass.
    const toldEvents = await events(cluster, ns, 'w', 'DriftDetected');
    assert.ok(toldEvents.length <= 2, JSON.stringify(toldEvents.map((e) => e.message)));
    for (const e of toldEvents) assert.equal(times([e]), 1, `told once: ${e.message}`);

    const o = await off.get('o');
    assert.equal(condition(o, 'Drifted'), undefined, 'off tells no drift');
    assert.equal((await events(cluster, ns, 'o', 'DriftDetected')).length, 0);
    assert.ok(condition(o, 'Ready') !== undefined && condition(o, 'Ready')?.reason !== 'ReadinessNotTracked', `off still tracks readiness: ${JSON.stringify(condition(o, 'Ready'))}`);
  });
});
