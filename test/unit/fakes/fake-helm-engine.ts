/**
 * A stand-in for chartpilot-helm's engine mode in the engine client's unit tests
 * (test/unit/helm/engine-client.test.ts), speaking the engine protocol (helm-worker/README.md
 * "Engine protocol"). What it does with a call is chosen by the release's name:
 *   ok        a deployed release (revision 1); with postRender, asks for it and stores the answer as the manifest
 *   badrender asks for a post-render of a manifest that is not YAML; an error answer fails the call as helm does
 *   slow      answers after 200 ms (calls overlap)
 *   hang      never answers; a cancel is answered `cancelled` unless FAKE_ENGINE_IGNORE_CANCEL=1
 *   die       the engine exits mid-call (code 3)
 *   fail      fails with helm's words for a chart's `fail`, quoting the call's values
 *   missing   release: not found
 *   refused   a deployed release whose answer lists what the call's confinement refused
 * Every request is written to FAKE_ENGINE_DIR/<pid>-<id>.json, with the kubeconfig file's content
 * as it was during the call. Run through test/fixtures/helm/fake-helm-engine.sh.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

interface Call {
  id: number;
  op: string;
  release: string;
  namespace: string;
  kubeconfig?: string;
  values?: string;
  postRender?: boolean;
}

const dir = process.env['FAKE_ENGINE_DIR'] ?? '';
const send = (m: unknown): void => {
  process.stdout.write(`${JSON.stringify(m)}\n`);
};
const release = (c: Call, manifest: string): unknown => ({
  name: c.release, namespace: c.namespace, revision: 1, status: 'deployed', chartName: 'webapp', chartVersion: '1.0.0',
  appVersion: '1', notes: '', manifest, description: 'Install complete', applyMethod: 'ssa',
});
const waitingPostRender = new Map<number, (a: { manifest?: string; error?: string }) => void>();
const hanging = new Set<number>();

send({ ready: true, engine: 2, helmVersion: 'v4.1.4', pid: process.pid });

function handle(c: Call): void {
  if (dir !== '') {
    const kubeconfig = c.kubeconfig !== undefined && existsSync(c.kubeconfig) ? readFileSync(c.kubeconfig, 'utf8') : null;
    writeFileSync(join(dir, `${String(process.pid)}-${String(c.id)}.json`), JSON.stringify({ ...c, kubeconfigContent: kubeconfig }));
  }
  const manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: team-a\n';
  switch (c.release) {
    case 'ok':
    case 'badrender':
      if (c.postRender !== true) {
        send({ id: c.id, release: release(c, manifest) });
        return;
      }
      waitingPostRender.set(c.id, (a) => {
        if (a.error !== undefined) send({ id: c.id, error: { class: 'failed', message: `error while running post render on files: ${a.error}` } });
        else send({ id: c.id, release: release(c, a.manifest ?? '') });
      });
      send({ id: c.id, postRender: c.release === 'ok' ? manifest : 'a: [unclosed\n' });
      return;
    case 'slow':
      setTimeout(() => {
        send({ id: c.id, release: release(c, manifest) });
      }, 200);
      return;
    case 'hang':
      hanging.add(c.id);
      return;
    case 'die':
      process.exit(3);
      break;
    case 'refused':
      send({ id: c.id, release: release(c, manifest), refusals: ['refused to delete ConfigMap "cluster-config" in namespace kube-system: objects of this custom resource must stay in its namespace team-a'] });
      return;
    case 'fail':
      send({ id: c.id, error: { class: 'failed', message: `UPGRADE FAILED: execution error at (webapp/templates/a.yaml:1:4): refused ${c.values ?? ''}` } });
      return;
    default:
      send({ id: c.id, error: { class: 'not-found', message: 'release: not found' } });
  }
}

createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  const m = JSON.parse(line) as Partial<Call> & { cancel?: number; postRendered?: number; manifest?: string; error?: string };
  if (m.cancel !== undefined) {
    if (hanging.delete(m.cancel) && process.env['FAKE_ENGINE_IGNORE_CANCEL'] !== '1') send({ id: m.cancel, error: { class: 'cancelled', message: 'context canceled' } });
    return;
  }
  if (m.postRendered !== undefined) {
    waitingPostRender.get(m.postRendered)?.({ ...(m.manifest === undefined ? {} : { manifest: m.manifest }), ...(m.error === undefined ? {} : { error: m.error }) });
    waitingPostRender.delete(m.postRendered);
    return;
  }
  handle(m as Call);
}).on('close', () => process.exit(0));
