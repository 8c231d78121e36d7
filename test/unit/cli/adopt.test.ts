import { RecordKeys } from '../../../src/helm/record-mac.js';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { adoptCommand, adoptReleases } from '../../../src/cli/adopt.js';
import { SERVICE_ACCOUNT_NAMESPACE_FILE } from '../../../src/controller/leader-election/config.js';
import { REPO_ROOT } from '../generate/helpers.js';
import { watchEntry } from '../controller/watch-entry-fixture.js';

function io(env: Record<string, string | undefined> = {}): { out: string[]; err: string[]; io: Parameters<typeof adoptCommand>[1] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { stdout: (l) => out.push(l), stderr: (l) => err.push(l), env } };
}

describe('chartpilot adopt: flags', () => {
  it('--help says what it does and its exit codes', async () => {
    const r = io();
    assert.equal(await adoptCommand(['--help'], r.io), 0);
    assert.match(r.out.join('\n'), /Takes over, for chartpilot, the Helm releases/);
    assert.match(r.out.join('\n'), /4 some records were refused/);
  });

  it('an unknown flag or a bad name is exit 2, each problem named', async () => {
    const unknown = io();
    assert.equal(await adoptCommand(['--nope'], unknown.io), 2);
    assert.match(unknown.err.join('\n'), /--nope/);
    const bad = io();
    assert.equal(await adoptCommand(['--namespace', 'Bad_NS', '--seal-key-secret', 'Not A Name', '--watches-file', '/nonexistent/watches.yaml'], bad.io), 2);
    const text = bad.err.join('\n');
    assert.match(text, /--namespace is "Bad_NS"/);
    assert.match(text, /--seal-key-secret is "Not A Name"/);
    assert.match(text, /nonexistent\/watches\.yaml/);
  });

  // In a pod (a CI runner in Kubernetes) the pod's namespace is found, as it should be.
  it('outside a pod, without --operator-namespace or POD_NAMESPACE, stops with exit 3 and says what to set', { skip: existsSync(SERVICE_ACCOUNT_NAMESPACE_FILE) && 'runs in a pod' }, async () => {
    const r = io({ KUBECONFIG: '/nonexistent/kubeconfig' });
    assert.equal(await adoptCommand(['--watches-file', join(REPO_ROOT, 'watches.yaml')], r.io), 3);
    assert.equal(r.err.length, 1);
    assert.match(r.err[0] ?? '', /^error: the operator's namespace \(where its seal key Secret is kept\) is unknown: .*set POD_NAMESPACE \(or --operator-namespace\)/);
  });
});

describe('adoptReleases and Ansible kinds', () => {
  it('skips an Ansible kind with a line saying why, without asking the cluster for its releases', async () => {
    const entry = {
      ...watchEntry('Greeting', { chartPath: '' }),
      ansible: {
        role: '/roles/greeting', vars: {}, finalizer: undefined, manageStatus: true, watchClusterScopedResources: false, snakeCaseParameters: true,
        watchAnnotationsChanges: false, markUnsafe: false, blacklist: [], maxRunnerArtifacts: 20,
      },
    };
    const asked: string[] = [];
    // Any use of the client fails the test: there is nothing of an Ansible kind to adopt.
    const client = new Proxy({}, { get: (_t, p) => { asked.push(String(p)); throw new Error(`the client was used (${String(p)})`); } });
    const lines: string[] = [];
    const tally = await adoptReleases({
      client: client as never,
      recordKeys: new RecordKeys(Buffer.alloc(32)),
      entries: new Map([[entry, { group: 'demo.example.com', version: 'v1', kind: 'Greeting', plural: 'greetings', namespaced: true } as never]]),
      namespaces: [],
      dryRun: true,
      report: (line) => { lines.push(line); },
    });
    assert.deepEqual(tally, { adopted: 0, refused: 0 });
    assert.deepEqual(lines, ['skipped Greeting: it is served by an Ansible role or playbook, which has no Helm releases to adopt']);
    assert.deepEqual(asked, []);
  });
});
