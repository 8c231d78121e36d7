/**
 * #44, dependencies between CRs (watches entry `dependsOn`) with values from what a dependency
 * made, on the real control plane and helm: an app CR waits, Ready False DependencyNotReady
 * naming its database CR, until that CR exists and is Ready; then it installs, taking the
 * password the database chart generated into a Secret (valuesFrom). A cycle between two CRs is
 * reported on both within seconds; deleting the database is allowed and shown on the app, whose
 * release stays. The app's status shows its outputs (CEL over its objects, the clusterIP live),
 * typed in the CRD `generate crd` writes and printed by kubectl as a column.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { established, resourceOf } from './crd.js';
import { condition, type Cr } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import { kubectlTable, rowOf } from './kubectl-table.js';
import { operatorScenario } from './scenario.js';

/** The app's outputs: its URL, the clusterIP the API server gave its Service (live only), a Secret's name. */
const WEB = 'objects.Service[self.metadata.name + "-web"]';
const OUTPUTS = {
  url: { expression: `"http://" + ${WEB}.metadata.name + "." + self.metadata.namespace + ":" + string(${WEB}.spec.ports[0].port)`, type: 'string', column: true },
  clusterIP: { expression: `${WEB}.spec.clusterIP`, type: 'string' },
  credentials: { expression: 'objects.Secret[self.metadata.name + "-credentials"].metadata.name', type: 'string' },
};

const ready = (cr: Cr): boolean => condition(cr, 'Ready')?.status === 'True';

describe('dependsOn', () => {
  it('an app waits for its database, then installs with the password the database made; cycles and deletions are told', { timeout: 6 * 60_000 }, async (t) => {
    const {
      cluster,
      ns,
      op,
      kinds: [dbKind, appKind],
      crs: [db, app],
    } = await operatorScenario(t, {
      namespace: 'depends-on',
      watches: [
        { kind: 'Database', chart: fixtureChart('database') },
        { kind: 'App', chart: fixtureChart('referenced'), extra: { dependsOn: { specField: 'dependsOn' }, valuesFrom: { specField: 'valuesFrom' }, outputs: OUTPUTS, readyWhen: `${WEB}.spec.?clusterIP.orValue("") != ""` } },
      ],
    });
    const appSpec = (dependsOn: unknown) => ({
      dependsOn,
      valuesFrom: [{ kind: 'Secret', name: 'db-password', valuesKey: 'password', targetPath: 'db.password' }],
    });

    await app.apply('app', appSpec([{ kind: dbKind.kind, name: 'db' }]));
    const waiting = await app.until('app', 'DependencyNotReady', (x) => condition(x, 'Ready')?.reason === 'DependencyNotReady');
    assert.match(condition(waiting, 'Ready')?.message ?? '', new RegExp(`^waiting for ${dbKind.kind} ${ns}/db: ${dbKind.kind} ${ns}/db does not exist`));
    assert.equal(condition(waiting, 'Reconciling')?.status, 'True', 'kstatus: in progress');
    assert.equal((await cluster.helm(['status', 'app', '-n', ns], { allowFail: true })).exitCode, 1, 'nothing installed');

    const created = Date.now();
    await db.apply('db', { user: 'shop' });
    await db.until('db', 'Ready', ready);
    await app.until('app', 'Ready', ready, 30_000);
    t.diagnostic(`app Ready ${String(Date.now() - created)} ms after the database CR was created`);
    const secret = async (name: string): Promise<Record<string, string>> => {
      const r = await cluster.kubectl(['get', 'secret', name, '-n', ns, '-o', 'json']);
      const data = (JSON.parse(r.stdout) as { data: Record<string, string> }).data;
      return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    };
    const generated = (await secret('db-password'))['password'] ?? '';
    assert.equal(generated.length, 24);
    assert.equal((await secret('app-credentials'))['password'], generated, 'the app got the password the database made');

    // Its outputs, computed from its objects: the clusterIP as the API server allocated it.
    const svc = JSON.parse((await cluster.kubectl(['get', 'service', 'app-web', '-n', ns, '-o', 'json'])).stdout) as { spec: { clusterIP: string } };
    const withOutputs = await app.until('app', 'outputs', (x) => condition(x, 'OutputsResolved')?.status === 'True');
    assert.deepEqual((withOutputs.status as { outputs?: unknown }).outputs, { url: `http://app-web.${ns}:8080`, clusterIP: svc.spec.clusterIP, credentials: 'app-credentials' });
    assert.equal(condition(withOutputs, 'OutputsResolved')?.message, '3 outputs resolved');
    assert.ok(!JSON.stringify(withOutputs.status).includes(generated), 'the password is in no output or condition');
    // The CRD as `generate crd` writes it for this entry: the API server takes it, kubectl prints the column.
    const crds = await execa(process.execPath, [BIN, 'generate', 'crd', '--watches-file', join(op.dir, 'watches.yaml')], { env: cluster.env, extendEnv: false, stdin: 'ignore' });
    writeFileSync(join(op.dir, 'crds.yaml'), crds.stdout);
    await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(op.dir, 'crds.yaml')]);
    await established(cluster, resourceOf(appKind));
    const table = await kubectlTable(cluster, resourceOf(appKind), ns);
    t.diagnostic(table.text);
    assert.equal(rowOf(table, 'app')['URL'], `http://app-web.${ns}:8080`, table.text);

    // A cycle: reported on both CRs at once, nothing installed for either.
    const started = Date.now();
    await app.apply('c1', appSpec([{ kind: app.kind.kind, name: 'c2' }]));
    await app.apply('c2', appSpec([{ kind: app.kind.kind, name: 'c1' }]));
    for (const name of ['c1', 'c2']) {
      const cr = await app.until(name, 'DependencyCycle', (x) => condition(x, 'Irreconcilable')?.reason === 'DependencyCycle', 30_000);
      assert.match(condition(cr, 'Irreconcilable')?.message ?? '', /^dependency cycle: .*c1 → .*c2 → .*c1|^dependency cycle: .*c2 → .*c1 → .*c2/);
    }
    t.diagnostic(`the cycle was on both CRs ${String(Date.now() - started)} ms after the second was applied`);
    assert.equal((await cluster.helm(['status', 'c1', '-n', ns], { allowFail: true })).exitCode, 1);

    // Deleting the database is allowed; the app says so and keeps its release.
    await db.delete('db');
    await db.gone('db');
    // Told while it is deleted, then once it is gone.
    await app.until('app', 'DependencyNotReady: does not exist', (x) => condition(x, 'Ready')?.reason === 'DependencyNotReady' && / does not exist;/.test(condition(x, 'Ready')?.message ?? ''), 30_000);
    assert.equal((await cluster.helm(['status', 'app', '-n', ns])).exitCode, 0, 'the release stays');
  });
});
