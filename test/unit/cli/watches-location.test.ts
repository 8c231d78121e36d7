// Where `run` finds the watches file without --watches-file: operator-sdk's ./watches.yaml of the
// working directory, its Dockerfiles' ${HOME}/watches.yaml, then chartpilot's image layout.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultWatchesFile, watchesCandidates } from '../../../src/cli/watches-location.js';

const only = (...present: string[]) => (p: string): Promise<boolean> => Promise.resolve(present.includes(p));

describe('the default watches file', () => {
  it("is the working directory's first, then $HOME's, then /opt/chartpilot's", () => {
    assert.deepEqual(watchesCandidates('/opt/helm', { HOME: '/opt/helm' }), ['/opt/helm/watches.yaml', '/opt/chartpilot/watches.yaml']);
    assert.deepEqual(watchesCandidates('/opt/chartpilot', { HOME: '/opt/ansible' }), ['/opt/chartpilot/watches.yaml', '/opt/ansible/watches.yaml']);
    assert.deepEqual(watchesCandidates('/work', {}), ['/work/watches.yaml', '/opt/chartpilot/watches.yaml']);
    assert.deepEqual(watchesCandidates('/work', { HOME: '' }), ['/work/watches.yaml', '/opt/chartpilot/watches.yaml']);
  });

  it("finds operator-sdk's layout: WORKDIR ${HOME}, or only HOME set on chartpilot's WORKDIR", async () => {
    // helm-operator's Dockerfile: ENV HOME=/opt/helm, COPY watches.yaml ${HOME}/watches.yaml, WORKDIR ${HOME}.
    assert.deepEqual(await defaultWatchesFile('/opt/helm', { HOME: '/opt/helm' }, only('/opt/helm/watches.yaml')), { ok: true, path: '/opt/helm/watches.yaml' });
    // The same Dockerfile without its WORKDIR line: chartpilot's base image's /opt/chartpilot stays the working directory.
    assert.deepEqual(await defaultWatchesFile('/opt/chartpilot', { HOME: '/opt/helm' }, only('/opt/helm/watches.yaml')), { ok: true, path: '/opt/helm/watches.yaml' });
    // chartpilot's own layout under the Ansible image, whose WORKDIR is ansible-operator's /opt/ansible.
    assert.deepEqual(await defaultWatchesFile('/opt/ansible', { HOME: '/opt/ansible' }, only('/opt/chartpilot/watches.yaml')), { ok: true, path: '/opt/chartpilot/watches.yaml' });
    // Both there: the working directory's wins, as --watches-file=./watches.yaml would read it.
    assert.deepEqual(await defaultWatchesFile('/opt/helm', { HOME: '/opt/helm' }, only('/opt/helm/watches.yaml', '/opt/chartpilot/watches.yaml')), { ok: true, path: '/opt/helm/watches.yaml' });
  });

  it('names every place looked at, and the flag, when there is none', async () => {
    const r = await defaultWatchesFile('/srv', { HOME: '/home/op' }, only());
    assert.ok(!r.ok);
    assert.match(r.problem, /^no watches file: looked for \/srv\/watches\.yaml, \/home\/op\/watches\.yaml, \/opt\/chartpilot\/watches\.yaml; give its path with --watches-file=<path>/u);
  });
});
