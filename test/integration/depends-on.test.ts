/**
 * #44, dependencies between CRs (watches entry `dependsOn`) with values from what a dependency
 * made, on the real control plane and helm: an app CR waits, Ready False DependencyNotReady
 * naming its database CR, until that CR exists and is Ready; then it installs, taking the
 * password the database chart generated into a Secret (valuesFrom). A cycle between two CRs is
 * reported on both within seconds; deleting the database is allowed and shown on the app, whose
 * release stays.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition, type Cr } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { operatorScenario } from './scenario.js';

const ready = (cr: Cr): boolean => condition(cr, 'Ready')?.status === 'True';

describe('dependsOn', () => {
  it('an app waits for its database, then installs with the password the database made; cycles and deletions are told', { timeout: 6 * 60_000 }, async (t) => {
    const {
      cluster,
      ns,
      kinds: [dbKind],
      crs: [db, app],
    } = await operatorScenario(t, {
      namespace: 'depends-on',
      watches: [
        { kind: 'Database', chart: fixtureChart('database') },
        { kind: 'App', chart: fixtureChart('referenced'), extra: { dependsOn: { specField: 'dependsOn' }, valuesFrom: { specField: 'valuesFrom' } } },
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
