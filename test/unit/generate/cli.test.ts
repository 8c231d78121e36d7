/** `chartpilot generate` and `chartpilot new` as a user meets them: output, messages, exit codes. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { generateCommand, newCommand } from '../../../src/generate/cli.js';
import { captureIo, REPO_ROOT, tempTree } from './helpers.js';

const NO_HELM = { HELM_BIN: '/nonexistent/helm' };

async function watchesDir(entries: string): Promise<string> {
  return tempTree('cli', {
    'watches.yaml': entries,
    'charts/app/Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
    'charts/app/values.yaml': 'size: 1\n',
    'charts/app/values.schema.json': JSON.stringify({ type: 'object', properties: { size: { type: ['string', 'boolean'] } } }),
    'charts/app/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
  });
}

describe('chartpilot generate', () => {
  it('prints help with exit 0, and usage with exit 2 when the generator is missing or unknown', async () => {
    for (const argv of [['--help'], ['crd', '--help'], ['rbac', '-h'], ['deploy', '--help'], ['sample', '--help'], ['all', '--help']]) {
      const io = captureIo();
      assert.equal(await generateCommand(argv, io), 0, argv.join(' '));
      assert.match(io.out(), /^Usage: chartpilot generate/u);
    }
    const none = captureIo();
    assert.equal(await generateCommand([], none), 2);
    assert.match(none.err(), /Usage: chartpilot generate <what>/);
    const unknown = captureIo();
    assert.equal(await generateCommand(['crds2'], unknown), 2);
    assert.match(unknown.err(), /error: unknown generator "crds2"; choose one of crd, rbac, deploy, sample, all/);
  });

  it('generate crd prints a CRD per kind, with notes on stderr', async () => {
    const dir = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n');
    const io = captureIo();
    assert.equal(await generateCommand(['crd', '--watches-file', join(dir, 'watches.yaml')], io), 0, io.err());
    const docs = parseAllDocuments(io.out()).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
    assert.deepEqual(docs.map((d) => [d.kind, d.metadata.name]), [['CustomResourceDefinition', 'apps.apps.example.com']]);
    assert.match(io.err(), /note: apps\.apps\.example\.com: spec\.size: a value of type string or boolean has no CRD equivalent/);
    assert.match(io.out(), /^# - spec\.size: a value of type string or boolean/mu, 'the note is in the file too');
  });

  it('generate crd --output-dir writes <group>_<plural>.yaml', async () => {
    const dir = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n');
    const io = captureIo();
    assert.equal(await generateCommand(['crd', `--watches-file=${join(dir, 'watches.yaml')}`, `--output-dir=${join(dir, 'out')}`], io), 0, io.err());
    assert.deepEqual(await readdir(join(dir, 'out')), ['apps.example.com_apps.yaml']);
  });

  it('exits 2 with the loader’s problems for a bad watches.yaml, and for kinds a CRD cannot have', async () => {
    const bad = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/none}\n');
    const io = captureIo();
    assert.equal(await generateCommand(['crd', '--watches-file', join(bad, 'watches.yaml')], io), 2);
    assert.match(io.err(), /error: .*chart "charts\/none".*not found/);

    const noGroup = await watchesDir('- {group: "", version: v1, kind: App, chart: charts/app}\n');
    const io2 = captureIo();
    assert.equal(await generateCommand(['crd', '--watches-file', join(noGroup, 'watches.yaml')], io2), 2);
    assert.match(io2.err(), /error: App\.v1: group "" cannot hold a CustomResourceDefinition/);

    const missing = captureIo();
    assert.equal(await generateCommand(['crd', '--watches-file', '/nonexistent/watches.yaml'], missing), 2);
    assert.match(missing.err(), /cannot read watches file/);
  });

  it('exits 2 on unknown flags and bad names', async () => {
    const io = captureIo();
    assert.equal(await generateCommand(['crd', '--watch-file', 'x'], io), 2);
    assert.match(io.err(), /error: Unknown option '--watch-file'/);
    const io2 = captureIo();
    assert.equal(await generateCommand(['rbac', '--role-namespace', 'ok,Not_OK', '--namespace', 'A'], io2), 2);
    assert.match(io2.err(), /--namespace "A" must be a lower-case DNS label/);
    assert.match(io2.err(), /--role-namespace "Not_OK" is not a namespace name/);
    const io3 = captureIo();
    assert.equal(await generateCommand(['deploy', 'extra'], io3), 2);
    assert.match(io3.err(), /unexpected argument "extra"/);
  });

  it('generate rbac --tenant-namespace needs a ServiceAccount to grant, and checks the names', async () => {
    const dir = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n');
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--offline', '--watches-file', join(dir, 'watches.yaml'), '--tenant-namespace', 'team-a'], io), 2);
    assert.match(io.err(), /error: --tenant-namespace grants the ServiceAccount the charts run as, but none is set: add --default-service-account <name> or serviceAccount/);
    const io2 = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--tenant-namespace', 'Team', '--default-service-account', 'Bad_Name'], io2), 2);
    assert.match(io2.err(), /--tenant-namespace "Team" is not a namespace name/);
    assert.match(io2.err(), /--default-service-account "Bad_Name" is not a ServiceAccount name/);
  });

  it('generate rbac exits 3 when helm cannot run', async () => {
    const dir = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n');
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--offline', '--watches-file', join(dir, 'watches.yaml')], io), 3);
    assert.match(io.err(), /error: cannot run helm \(\/nonexistent\/helm\).*install helm or set HELM_BIN/);
  });

  it('generate deploy names the image after the operator by default', async () => {
    const io = captureIo();
    assert.equal(await generateCommand(['deploy', '--name', 'shop', '--namespace', 'shop-system'], io), 0, io.err());
    assert.match(io.out(), /image: shop:\d+\.\d+\.\d+/);
    assert.match(io.out(), /namespace: shop-system/);
  });

  it('generate sample prints a CR whose spec is values.yaml', async () => {
    const dir = await watchesDir('- {group: apps.example.com, version: v1, kind: App, chart: charts/app}\n');
    const io = captureIo();
    assert.equal(await generateCommand(['sample', '--watches-file', join(dir, 'watches.yaml')], io), 0, io.err());
    const cr = parseAllDocuments(io.out())[0]?.toJS() as { kind: string; spec: unknown };
    assert.deepEqual([cr.kind, cr.spec], ['App', { size: 1 }]);
  });
});

describe('chartpilot new', () => {
  it('refuses a non-empty directory, before writing anything', async () => {
    const dir = await tempTree('new-busy', { 'keep.txt': 'mine' });
    const io = captureIo(NO_HELM);
    const code = await newCommand([dir, '--chart', join(REPO_ROOT, 'charts/webapp'), '--group', 'apps.example.com', '--version', 'v1', '--kind', 'Shop'], io);
    assert.equal(code, 2);
    assert.match(io.err(), /is not empty \(keep\.txt\); chartpilot new only writes into a new or empty directory/);
    assert.deepEqual(await readdir(dir), ['keep.txt']);
  });

  it('lists every missing flag and bad name at once (exit 2)', async () => {
    const io = captureIo(NO_HELM);
    assert.equal(await newCommand([], io), 2);
    for (const f of ['--chart', '--group', '--kind']) assert.match(io.err(), new RegExp(`${f} is required`));
    assert.doesNotMatch(io.err(), /--version is required/, 'the API version defaults to v1alpha1, as with new --ansible');
    assert.match(io.err(), /name the directory to create/);
    const dir = join(await tempTree('new-bad', {}), 'proj');
    const io2 = captureIo(NO_HELM);
    assert.equal(await newCommand([dir, '--chart', '/nonexistent', '--group', 'nodot', '--version', 'v1', '--kind', 'Shop'], io2), 2);
    assert.match(io2.err(), /group "nodot"/);
    assert.match(io2.err(), /--chart \/nonexistent: not found/);
    assert.equal(existsSync(dir), false);
  });

  it('exits 3 without writing when helm cannot run', async () => {
    const dir = join(await tempTree('new-nohelm', {}), 'proj');
    const io = captureIo(NO_HELM);
    assert.equal(await newCommand([dir, '--chart', join(REPO_ROOT, 'charts/webapp'), '--group', 'apps.example.com', '--version', 'v1', '--kind', 'Shop'], io), 3);
    assert.equal(existsSync(dir), false);
  });

  it('shows its help', async () => {
    const io = captureIo();
    assert.equal(await newCommand(['--help'], io), 0);
    assert.match(io.out(), /^Usage: chartpilot new <dir>/u);
    assert.match(await readFile(join(REPO_ROOT, 'watches.yaml'), 'utf8'), /WebApp/);
  });
});
