/**
 * #44, values from Secrets and ConfigMaps (watches entry `valuesFrom`), on the real control plane
 * and helm: a CR waits, with a condition naming the Secret, until the Secret it references exists;
 * the password reaches the chart and nothing else (status, events, logs, a helm error's message);
 * rotating it upgrades once, changing another key of the Secret upgrades nothing; the platform's
 * reference (in the operator's namespace) wins over the spec; a reference into another namespace
 * is refused; a missing optional one is skipped.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourceOf } from './crd.js';
import { condition, eventsFor } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { OPERATOR_NAMESPACE } from './operator.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('referenced');

describe('valuesFrom', () => {
  it('takes a password from a Secret and platform settings from a ConfigMap, watched, and never shows the password; a kind without valuesFrom keeps such keys as values', { timeout: 6 * 60_000 }, async (t) => {
    const platform = `platform-${String(process.pid)}-${String(Date.now() % 100_000)}`;
    const {
      cluster,
      ns,
      kind,
      op,
      cr,
      crs: [, plain],
    } = await operatorScenario(t, {
      namespace: 'values-from',
      watches: [
        {
          kind: 'ValuesFrom',
          chart: CHART,
          extra: {
            valuesFrom: {
              specField: 'valuesFrom',
              references: [{ kind: 'ConfigMap', name: platform, valuesKey: 'values.yaml' }],
            },
          },
        },
        // The same chart for a kind that does not opt in: keys named like the new fields are values.
        { kind: 'PlainValues', chart: CHART },
      ],
    });
    const kubectl = (args: string[], input?: string) => cluster.kubectl(args, input === undefined ? {} : { input });
    await kubectl(['create', 'configmap', platform, '-n', OPERATOR_NAMESPACE, '--from-literal=values.yaml=platform: {region: eu-west}\ngreeting: from-the-platform\n']);
    t.after(async () => {
      await cluster.kubectl(['delete', 'configmap', platform, '-n', OPERATOR_NAMESPACE, '--ignore-not-found'], { allowFail: true });
    });
    const refs = [
      { kind: 'Secret', name: 'db-credentials', valuesKey: 'password', targetPath: 'db.password' },
      { kind: 'Secret', name: 'not-there', valuesKey: 'x', targetPath: 'db.extra', optional: true },
    ];
    const first = 'first-Pa55word-value';
    const second = 'second-Pa55word-value';
    const third = 'third-Pa55word-value';

    // Before the Secret exists: held back, the condition names it, nothing installed.
    await cr.apply('app', { greeting: 'from-the-spec', db: { host: 'db.example' }, valuesFrom: refs });
    const waiting = await cr.until('app', 'ValuesReferenceNotFound', (x) => condition(x, 'Irreconcilable')?.reason === 'ValuesReferenceNotFound');
    assert.match(condition(waiting, 'Irreconcilable')?.message ?? '', new RegExp(`^Secret ${ns}/db-credentials does not exist \\(spec\\.valuesFrom\\[0\\]\\): create it, or mark the reference optional: true`));
    assert.equal((await cluster.helm(['status', 'app', '-n', ns], { allowFail: true })).exitCode, 1, 'nothing installed');

    // The Secret appears: the watch brings the CR back at once (its period is the default 1m).
    const created = Date.now();
    await kubectl(['create', 'secret', 'generic', 'db-credentials', '-n', ns, `--from-literal=password=${first}`, '--from-literal=user=app']);
    await cr.deployed('app', 30_000);
    t.diagnostic(`deployed ${String(Date.now() - created)} ms after the Secret was created`);
    const rendered = async (name: string): Promise<Record<string, string>> => {
      const r = await kubectl(['get', name, '-n', ns, '-o', 'json']);
      const obj = JSON.parse(r.stdout) as { data?: Record<string, string> };
      return Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, name.startsWith('secret/') ? Buffer.from(v, 'base64').toString('utf8') : v]));
    };
    assert.deepEqual(await rendered('secret/app-credentials'), { host: 'db.example', password: first });
    // The platform's reference wins over the spec; the spec over the chart's defaults.
    assert.deepEqual(await rendered('configmap/app-settings'), { greeting: 'from-the-platform', region: 'eu-west', valuesFromValue: 'null', dependsOnValue: 'null' });
    const helmValues = JSON.parse((await cluster.helm(['get', 'values', 'app', '-n', ns, '-o', 'json'])).stdout) as Record<string, unknown>;
    assert.equal(helmValues['valuesFrom'], undefined, 'the references field is not a value');

    // Rotating the password upgrades once.
    const revisions = async (): Promise<number> => (JSON.parse((await cluster.helm(['history', 'app', '-n', ns, '-o', 'json'])).stdout) as unknown[]).length;
    assert.equal(await revisions(), 1);
    await kubectl(['patch', 'secret', 'db-credentials', '-n', ns, '--type=merge', '-p', JSON.stringify({ stringData: { password: second } })]);
    await waitFor('the rotated password rendered', async () => (await rendered('secret/app-credentials')).password === second, { timeoutMs: 30_000 });
    await cr.deployed('app');
    assert.equal(await revisions(), 2);
    // Another key of the same Secret upgrades nothing; the next rotation after it upgrades once more.
    await kubectl(['patch', 'secret', 'db-credentials', '-n', ns, '--type=merge', '-p', JSON.stringify({ stringData: { user: 'someone-else' } })]);
    await new Promise((r) => setTimeout(r, 3_000));
    await kubectl(['patch', 'secret', 'db-credentials', '-n', ns, '--type=merge', '-p', JSON.stringify({ stringData: { password: third } })]);
    await waitFor('the third password rendered', async () => (await rendered('secret/app-credentials')).password === third, { timeoutMs: 30_000 });
    assert.equal(await revisions(), 3, 'one upgrade per rotation, none for the key the CR does not reference');

    // A helm error that quotes the password: redacted wherever it is told.
    await cr.apply('app', { greeting: 'from-the-spec', db: { host: 'db.example' }, valuesFrom: refs, failWithPassword: true });
    const failedCr = await cr.until('app', 'ReleaseFailed', (x) => condition(x, 'ReleaseFailed')?.status === 'True');
    assert.match(condition(failedCr, 'ReleaseFailed')?.message ?? '', /refusing the password <redacted>/);

    // Into another namespace: refused, nothing read there.
    await cr.apply('sneaky', { valuesFrom: [{ kind: 'Secret', name: 'db-credentials', namespace: OPERATOR_NAMESPACE }] });
    const refused = await cr.until('sneaky', 'ValuesReferenceInvalid', (x) => condition(x, 'Irreconcilable')?.reason === 'ValuesReferenceInvalid');
    assert.match(condition(refused, 'Irreconcilable')?.message ?? '', /in another namespace; this kind's watches entry does not allow references across namespaces/);

    // An operator-sdk CR whose values happen to have these names: passed to the chart as values, nothing read.
    const literal = [{ kind: 'Secret', name: 'db-credentials', valuesKey: 'password' }];
    await plain.apply('literal', { valuesFrom: literal, dependsOn: ['a', 'b'] });
    await plain.deployed('literal');
    const seen = await rendered('configmap/literal-settings');
    assert.deepEqual(JSON.parse(seen['valuesFromValue'] ?? ''), literal);
    assert.deepEqual(JSON.parse(seen['dependsOnValue'] ?? ''), ['a', 'b']);
    assert.equal((await rendered('secret/literal-credentials'))['password'], '', 'no reference was read');

    // The password appears nowhere but in the chart's own Secret (and Helm's record).
    const everything = [
      (await kubectl(['get', resourceOf(kind), '-n', ns, '-o', 'json'])).stdout,
      JSON.stringify(await eventsFor(cluster, ns, 'app')),
      (await kubectl(['get', 'events', '-n', ns, '-o', 'json'])).stdout,
      op.logs(),
    ].join('\n');
    for (const secret of [first, second, third].flatMap((p) => [p, Buffer.from(p).toString('base64')])) {
      assert.equal(everything.includes(secret), false, `${secret.slice(0, 6)}… must not appear in status, events or logs`);
    }
  });
});
