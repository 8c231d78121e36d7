/**
 * What the Ansible runs' API proxy costs per request: the same GETs and create+delete pairs sent
 * straight to the API server and through the proxy (HTTPS on loopback, token check, discovery,
 * confinement, owner stamp, recording), from this one process, so the difference in wall time and
 * CPU time is the proxy's.
 *
 *   npm run build && KUBECONFIG=.cluster/kubeconfig node dist/bench/ansible-proxy.js [requests=200]
 */
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { createApiProxy } from '../src/apiproxy/index.js';
import { createObject, deleteObject, getObject } from '../src/kube/objects.js';
import { createKubeClient, loadKubeConfig } from '../src/kube/rest.js';

const n = Number(process.argv[2] ?? 200);
const client = createKubeClient(loadKubeConfig(), { userAgent: 'chartpilot-bench' });
const log = pino({ level: 'warn' });
const ns = 'default';
const configMaps = { group: '', version: 'v1', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

const proxy = createApiProxy({ client, log, port: 0 });
const { port } = await proxy.start();
const ownerAt = { resource: configMaps, namespace: ns, name: 'bench-proxy-owner' };
await createObject(client, configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-proxy-owner', namespace: ns } }).catch(() => undefined);
const owner = await getObject(client, ownerAt);
const run = proxy.openSession({
  owner: { apiVersion: 'v1', kind: 'ConfigMap', name: 'bench-proxy-owner', namespace: ns, uid: owner.metadata.uid ?? '' },
  confinement: { namespace: ns, allowClusterScoped: false, allowCrossNamespace: false },
  injectOwnerRef: true,
  log,
});
const kc = parse(run.kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string } }[] };
const ca = Buffer.from(kc.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8');
const viaProxy = new Agent({ connect: { ca } });
const auth = { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' };

async function proxied(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<void> {
  const res = await request(`https://127.0.0.1:${port}${path}`, { method, headers: auth, dispatcher: viaProxy, body: body === undefined ? undefined : JSON.stringify(body) });
  await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode}`);
}

interface Result {
  readonly medianMs: number;
  readonly cpuMsPerOp: number;
}

async function measure(op: (i: number) => Promise<void>): Promise<Result> {
  for (let i = 0; i < 10; i++) await op(-1 - i); // warm: connections, discovery, JIT
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await op(i);
    times.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)] ?? 0, cpuMsPerOp: (cpu.user + cpu.system) / 1000 / n };
}

const path = `/api/v1/namespaces/${ns}/configmaps`;
const cm = (name: string): { apiVersion: string; kind: string; metadata: { name: string } } => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
const rows: [string, Result][] = [
  ['GET direct', await measure(async () => { await getObject(client, ownerAt); })],
  ['GET via proxy', await measure(() => proxied('GET', `${path}/bench-proxy-owner`))],
  [
    'create+delete direct',
    await measure(async (i) => {
      await createObject(client, configMaps, ns, cm(`bench-direct-${i + 20}`));
      await deleteObject(client, { resource: configMaps, namespace: ns, name: `bench-direct-${i + 20}` });
    }),
  ],
  [
    'create+delete via proxy',
    await measure(async (i) => {
      await proxied('POST', path, cm(`bench-proxied-${i + 20}`));
      await proxied('DELETE', `${path}/bench-proxied-${i + 20}`);
    }),
  ],
];
for (const [what, r] of rows) console.log(`${what.padEnd(24)} median ${r.medianMs.toFixed(2)} ms   CPU ${r.cpuMsPerOp.toFixed(2)} ms/op (this process: client and proxy)`);
console.log(`objects recorded by the run: ${run.objects().length} (each created and deleted once)`);
run.close();
await proxy.stop();
await deleteObject(client, ownerAt).catch(() => undefined);
