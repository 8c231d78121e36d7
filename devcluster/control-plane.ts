// A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (simulated nodes and pods), started from the binaries provision.sh
// caches. What the flags are and why: the comments below and docs/development/devcluster.md.
//
// Everything about one control plane lives in its state dir:
//   pki/            CA, serving and client certs, service-account keys (certs.ts)
//   kubeconfig      admin (system:masters) kubeconfig with embedded credentials
//   state.json      ports, bin dir and each component's argv, so restarts reuse them
//   pids.json       component -> pid (plus the reaper's pid, if any)
//   pids            the same pids, one per line, for the reaper (plain bash)
//   logs/<component>.log
//   logs/audit.log  the API server's audit log of writes (only with StartOptions.auditLog)
//   audit-policy.yaml
//   etcd-data/
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { freePorts } from './ports.js';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify as toYaml } from 'yaml';
import { makePki, type Pki } from './certs.js';
import { fetchText, type TlsIdentity } from './http.js';
import { defaultBinDir } from './paths.js';
import { findProcesses, isOurs, killReaper, spawnDaemon, spawnReaper, tail, terminate, type Daemon } from './processes.js';
import { errorMessage } from '../src/lib/errors.js';

export const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'] as const;
export type Component = (typeof COMPONENTS)[number];

/** The simulated node every control plane gets; tests can rely on its name and label. */
export const NODE_NAME = 'kwok-node-0';

export interface StartOptions {
  /** State dir; created if missing. Must not already hold a control plane. */
  dir: string;
  /** Directory with symlinks to the binaries (provision.sh output); default: the cache's bin dir. */
  binDir?: string;
  /** Progress messages (one line each); default: none. */
  log?: (line: string) => void;
  /**
   * The pid whose death stops this control plane (via a detached reaper), so an interrupted test
   * run leaves nothing behind. Default: this process. null: no reaper, the daemons keep running
   * after this process exits until stopControlPlane (used by `npm run cluster:up`).
   */
  ownerPid?: number | null;
  /**
   * Have the API server log every write request (create, update, patch, delete,
   * deletecollection; reads not at all) to logs/audit.log, one JSON event per line at level
   * Metadata: who (user agent, user), what (verb, resource, subresource, name), when, and the
   * response code. Off by default: tests and `npm run cluster:up` don't pay for it; the bench turns
   * it on to attribute API writes to the processes that made them.
   */
  auditLog?: boolean;
}

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
}

export interface ControlPlane {
  dir: string;
  kubeconfig: string;
  binDir: string;
  /** https://127.0.0.1:<port> */
  server: string;
  ports: Ports;
  pids: Record<Component, number>;
  /** gitVersion from the API server's /version, e.g. v1.33.13. */
  version: string;
  startupMs: number;
  /** The audit log's path, with StartOptions.auditLog. */
  auditLog?: string;
}

interface State {
  binDir: string;
  ports: Ports;
  ownerPid: number | null;
  argv: Record<Component, string[]>;
}

type Pids = Partial<Record<Component | 'reaper', number>>;

/** A component that did not come up; the message names it and carries the tail of its log. */
export class ComponentStartError extends Error {
  constructor(
    readonly component: Component | 'node',
    reason: string,
    readonly logTail: string,
    readonly logFile: string,
  ) {
    super(`${component} did not start: ${reason}\n--- last lines of ${logFile} ---\n${logTail}\n---`);
    this.name = 'ComponentStartError';
  }

  /** Another process grabbed one of our ports between picking and binding it: worth a retry. */
  get portClash(): boolean {
    return /address already in use/i.test(this.logTail);
  }
}

const logFileOf = (dir: string, c: Component): string => join(dir, 'logs', `${c}.log`);

/** Starts a control plane in opts.dir and waits until it can run pods. */
export async function startControlPlane(opts: StartOptions): Promise<ControlPlane> {
  const dir = resolve(opts.dir);
  if (existsSync(join(dir, 'state.json'))) {
    throw new Error(`${dir} already holds a control plane; stop it first (stopControlPlane or npm run cluster:down)`);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce({ ...opts, dir });
    } catch (err) {
      if (!(err instanceof ComponentStartError && err.portClash && attempt < 3)) throw err;
      opts.log?.(`${err.component}: port taken by another process meanwhile, retrying with new ports`);
      await rm(dir, { recursive: true, force: true });
    }
  }
}

async function startOnce(opts: StartOptions & { dir: string }): Promise<ControlPlane> {
  const started = Date.now();
  const { dir } = opts;
  const log = opts.log ?? (() => undefined);
  const binDir = resolve(opts.binDir ?? defaultBinDir());
  const ownerPid = opts.ownerPid === undefined ? process.pid : opts.ownerPid;
  for (const c of COMPONENTS) {
    if (!existsSync(join(binDir, c))) throw new Error(`${join(binDir, c)} is missing: run npm run cluster:provision`);
  }
  await mkdir(join(dir, 'logs'), { recursive: true });

  const [ports, pki] = await Promise.all([pickPorts(), makePki(join(dir, 'pki'))]);
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, kubeconfigYaml(ports.apiserver, pki));
  const audit = opts.auditLog === true ? await writeAuditPolicy(dir) : undefined;
  const state: State = { binDir, ports, ownerPid, argv: componentArgs(dir, ports, pki, audit) };
  await writeJsonAtomic(join(dir, 'state.json'), state);

  const pids: Pids = {};
  // The reaper goes first, so even a start interrupted half-way is cleaned up.
  if (ownerPid !== null) pids.reaper = spawnReaper(ownerPid, dir);
  await writePids(dir, pids);

  const daemons = new Map<Component, Daemon>();
  // Spawning is synchronous, so a group is spawned first and the pid files are written once for
  // it: parallel writes could land out of order and lose pids that stop() and the reaper need.
  const launch = async (...group: Component[]): Promise<void> => {
    for (const c of group) {
      const d = spawnDaemon(join(binDir, c), state.argv[c], logFileOf(dir, c), componentEnv(dir, c));
      daemons.set(c, d);
      pids[c] = d.pid;
    }
    await writePids(dir, pids);
  };
  // Aborted on the first failure, so waits running in parallel stop polling too.
  const abort = new AbortController();
  const ready = async (c: Component, what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
    const t = Date.now();
    await waitUntil(c, what, daemons, dir, probe, timeoutMs, abort.signal);
    log(`${c} ${what} in ${String(Date.now() - t)} ms`);
  };
  const tls: TlsIdentity = await readTls(pki);
  const api = `https://127.0.0.1:${String(ports.apiserver)}`;

  try {
    await launch('etcd');
    await ready('etcd', 'healthy', () => etcdHealthy(ports.etcdClient));
    await launch('kube-apiserver');
    await ready('kube-apiserver', 'ready', () => apiReady(api, tls), 90_000);
    await launch('kube-controller-manager', 'kube-scheduler', 'kwok');
    const node = createNode(api, tls);
    await Promise.all([
      ready('kube-controller-manager', 'healthy', () => healthz(`https://127.0.0.1:${String(ports.controllerManager)}/healthz`)),
      ready('kube-scheduler', 'healthy', () => healthz(`https://127.0.0.1:${String(ports.scheduler)}/healthz`)),
      ready('kwok', 'healthy', () => healthz(`http://127.0.0.1:${String(ports.kwok)}/healthz`)),
      node,
    ]);
    // The node is schedulable once kwok reports it Ready and the node lifecycle controller has
    // lifted the not-ready taint; pods need the default ServiceAccount (serviceaccount controller).
    await Promise.all([
      ready('kwok', `node ${NODE_NAME} Ready`, () => nodeSchedulable(api, tls)),
      ready('kube-controller-manager', 'created ServiceAccount default/default', async () =>
        (await fetchText(`${api}/api/v1/namespaces/default/serviceaccounts/default`, { tls })).status === 200),
    ]);
    const version = await serverVersion(api, tls);
    const startupMs = Date.now() - started;
    log(`control plane ${version} ready in ${String(startupMs)} ms (${dir})`);
    return {
      dir, kubeconfig, binDir, server: api, ports, version, startupMs,
      ...(audit === undefined ? {} : { auditLog: audit.logPath }),
      pids: Object.fromEntries(COMPONENTS.map((c) => [c, pids[c] ?? 0])) as Record<Component, number>,
    };
  } catch (err) {
    abort.abort();
    // Stop what was started but keep the dir: the full logs are the first thing to look at.
    await stopProcesses(dir, pids, binDir);
    throw err;
  }
}

/** Stops every process of the control plane in dir (by pid: TERM, KILL after graceMs) and removes dir. */
export async function stopControlPlane(dir: string, opts: { graceMs?: number } = {}): Promise<void> {
  dir = resolve(dir);
  if (!existsSync(dir)) return;
  // Refuse to delete anything that is not a control-plane dir: dir comes from callers.
  if (!existsSync(join(dir, 'state.json')) && !existsSync(join(dir, 'pids.json'))) {
    throw new Error(`${dir} does not look like a control-plane state dir (no state.json); not deleting it`);
  }
  let binDir: string | undefined;
  try {
    binDir = readState(dir).binDir;
  } catch {
    binDir = undefined;
  }
  await stopProcesses(dir, readPids(dir), binDir, opts.graceMs);
  await rm(dir, { recursive: true, force: true });
}

async function stopProcesses(dir: string, pids: Pids, binDir: string | undefined, graceMs?: number): Promise<void> {
  const strays = binDir === undefined
    ? new Map<string, number[]>()
    : findProcesses(dir, Object.fromEntries(COMPONENTS.map((c) => [c, join(binDir, c)])));
  // Clients first, then the API server, then etcd: each exits within a second or two once nothing
  // is connected to it, while the API server waits 30 s+ on TERM with watchers still attached.
  const stages: Component[][] = [['kwok', 'kube-scheduler', 'kube-controller-manager'], ['kube-apiserver'], ['etcd']];
  for (const stage of stages) {
    const stagePids = new Set(stage.flatMap((c) => [...(pids[c] === undefined ? [] : [pids[c]]), ...(strays.get(c) ?? [])]));
    await terminate([...stagePids], dir, graceMs);
  }
  // The reaper last: if this process is cut short mid-stop (a test runner exiting during global
  // teardown, a second Ctrl-C), the reaper still finishes the job once we are gone. Racing it
  // is harmless: both only signal pids that are still ours.
  if (pids.reaper !== undefined) killReaper(pids.reaper, dir);
}

/**
 * Restarts one component with the same ports, flags and data (etcd keeps its data dir), for fault
 * tests: the API server or etcd going away and coming back. Resolves with the new pid once it is
 * healthy again. The old process gets TERM and, after graceMs (default 2 s), KILL: with clients
 * attached neither exits promptly on TERM (the API server waits 30 s+ for its watchers), and a
 * fault test wants the outage, not a polite shutdown. graceMs 0 is a crash (immediate KILL).
 */
export async function restartComponent(dir: string, component: 'kube-apiserver' | 'etcd', opts: { graceMs?: number } = {}): Promise<number> {
  dir = resolve(dir);
  const state = readState(dir);
  const pids = readPids(dir);
  const old = pids[component];
  if (old !== undefined) await terminate([old], dir, opts.graceMs ?? 2000);
  const d = spawnDaemon(join(state.binDir, component), state.argv[component], logFileOf(dir, component), componentEnv(dir, component));
  pids[component] = d.pid;
  await writePids(dir, pids);
  const daemons = new Map<Component, Daemon>([[component, d]]);
  const tls = await readTls(pkiPaths(dir));
  const probe = component === 'etcd'
    ? () => etcdHealthy(state.ports.etcdClient)
    : () => apiReady(`https://127.0.0.1:${String(state.ports.apiserver)}`, tls);
  await waitUntil(component, 'healthy after restart', daemons, dir, probe, 90_000, new AbortController().signal);
  return d.pid;
}

/** Whether dir holds a running control plane whose API server answers /readyz. */
export async function isHealthy(dir: string): Promise<boolean> {
  dir = resolve(dir);
  if (!existsSync(join(dir, 'state.json'))) return false;
  try {
    const state = readState(dir);
    const pids = readPids(dir);
    if (!COMPONENTS.every((c) => pids[c] !== undefined && isOurs(pids[c], dir))) return false;
    return await apiReady(`https://127.0.0.1:${String(state.ports.apiserver)}`, await readTls(pkiPaths(dir)));
  } catch {
    return false;
  }
}

/** The pids of a running control plane (component -> pid), from dir/pids.json. */
export function readPids(dir: string): Pids {
  try {
    return JSON.parse(readFileSync(join(dir, 'pids.json'), 'utf8')) as Pids;
  } catch {
    return {};
  }
}

function readState(dir: string): State {
  return JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as State;
}

// ---------------------------------------------------------------------------------------------
// Flags

interface AuditFiles {
  policyPath: string;
  logPath: string;
}

/**
 * Writes only, at level Metadata (no request or response bodies), one event per request at
 * ResponseComplete; reads (get, list, watch) are not logged at all. This keeps the log to a few
 * hundred bytes per write, and the API server's cost with it.
 */
const AUDIT_POLICY = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived', 'ResponseStarted', 'Panic'],
  rules: [
    { level: 'Metadata', verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
    { level: 'None' },
  ],
};

async function writeAuditPolicy(dir: string): Promise<AuditFiles> {
  const policyPath = join(dir, 'audit-policy.yaml');
  await writeFile(policyPath, toYaml(AUDIT_POLICY));
  return { policyPath, logPath: join(dir, 'logs', 'audit.log') };
}

/**
 * kube-apiserver's audit flags (checked against v1.33's --help). Batch mode: events are buffered
 * and written by a background goroutine, so a request never waits for the log file. The buffer
 * is larger than the default 10 000 because a full buffer drops events (a 1000-CR wave makes a
 * few thousand writes a second at most); batches of up to 100 events, at least once a second.
 */
function auditArgs(audit: AuditFiles): string[] {
  return [
    `--audit-policy-file=${audit.policyPath}`,
    `--audit-log-path=${audit.logPath}`,
    '--audit-log-format=json',
    // The bench reads the log by offset: it must never be rotated (lumberjack rotates at
    // 100 MB by default, which a 1000-CR run passes).
    '--audit-log-maxsize=1000000',
    '--audit-log-mode=batch',
    '--audit-log-batch-buffer-size=100000',
    '--audit-log-batch-max-size=100',
    '--audit-log-batch-max-wait=1s',
  ];
}

function componentArgs(dir: string, ports: Ports, pki: Pki, audit: AuditFiles | undefined): Record<Component, string[]> {
  const kubeconfig = join(dir, 'kubeconfig');
  const etcd = `http://127.0.0.1:${String(ports.etcdClient)}`;
  const peer = `http://127.0.0.1:${String(ports.etcdPeer)}`;
  // kcm and the scheduler also use the admin identity for delegated authn/authz of their own
  // /healthz and /metrics endpoints; without these flags they log warnings on every start.
  const delegated = [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`];
  return {
    etcd: [
      '--name=chartpilot',
      `--data-dir=${join(dir, 'etcd-data')}`,
      `--listen-client-urls=${etcd}`,
      `--advertise-client-urls=${etcd}`,
      // A free peer port too: the default 2380 would collide between concurrent control planes.
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=chartpilot=${peer}`,
      // Throwaway data: skipping fsync makes every write (and so every test) much faster.
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    'kube-apiserver': [
      `--etcd-servers=${etcd}`,
      '--bind-address=127.0.0.1',
      // Machines without a default route cannot derive an advertise address.
      '--advertise-address=127.0.0.1',
      `--secure-port=${String(ports.apiserver)}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      // Keeps the API server from writing self-signed certs to /var/run/kubernetes.
      `--cert-dir=${join(dir, 'pki', 'apiserver')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      '--service-cluster-ip-range=10.96.0.0/12',
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      // The `kubernetes` Service's endpoint would be 127.0.0.1, which Endpoints validation
      // rejects (loopback) every 10 s in the log; nothing here dials it from a pod anyway.
      '--endpoint-reconciler-type=none',
      '--profiling=false',
      ...(audit === undefined ? [] : auditArgs(audit)),
    ],
    'kube-controller-manager': [
      ...delegated,
      '--bind-address=127.0.0.1',
      `--secure-port=${String(ports.controllerManager)}`,
      `--cert-dir=${join(dir, 'pki', 'kube-controller-manager')}`,
      '--leader-elect=false',
      // All default controllers, notably garbage collector, deployment, replicaset, namespace,
      // serviceaccount, job and node lifecycle (which lifts the not-ready taint).
      '--controllers=*',
      '--service-account-private-key-file=' + pki.saKey,
      `--root-ca-file=${pki.caCert}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      '--profiling=false',
    ],
    'kube-scheduler': [
      ...delegated,
      '--bind-address=127.0.0.1',
      `--secure-port=${String(ports.scheduler)}`,
      `--cert-dir=${join(dir, 'pki', 'kube-scheduler')}`,
      '--leader-elect=false',
      '--profiling=false',
    ],
    kwok: [
      `--kubeconfig=${kubeconfig}`,
      '--manage-all-nodes=true',
      // > 0, or the node lifecycle controller sees no lease, marks the node NotReady and evicts.
      '--node-lease-duration-seconds=40',
      '--cidr=10.244.0.1/16',
      // Only for the /healthz probe.
      `--server-address=127.0.0.1:${String(ports.kwok)}`,
    ],
  };
}

function componentEnv(dir: string, c: Component): NodeJS.ProcessEnv {
  const env = { ...process.env };
  // Every component gets an explicit --kubeconfig; a caller's KUBECONFIG must not leak in.
  delete env.KUBECONFIG;
  // kwok loads ~/.kwok/kwok.yaml if present: a developer's own stages must not change our pods.
  if (c === 'kwok') env.HOME = join(dir, 'kwok-home');
  return env;
}

function kubeconfigYaml(port: number, pki: Pki): string {
  const b64 = (file: string): string => readFileSync(file).toString('base64');
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'chartpilot', cluster: { server: `https://127.0.0.1:${String(port)}`, 'certificate-authority-data': b64(pki.caCert) } }],
    users: [{ name: 'chartpilot-admin', user: { 'client-certificate-data': b64(pki.adminCert), 'client-key-data': b64(pki.adminKey) } }],
    contexts: [{ name: 'chartpilot', context: { cluster: 'chartpilot', user: 'chartpilot-admin', namespace: 'default' } }],
    'current-context': 'chartpilot',
    preferences: {},
  });
}

function pkiPaths(dir: string): Pki {
  const p = (f: string): string => join(dir, 'pki', f);
  return {
    caCert: p('ca.crt'), caKey: p('ca.key'), serverCert: p('apiserver.crt'), serverKey: p('apiserver.key'),
    adminCert: p('admin.crt'), adminKey: p('admin.key'), saKey: p('sa.key'), saPub: p('sa.pub'),
  };
}

async function readTls(pki: Pki): Promise<TlsIdentity> {
  const [ca, cert, key] = await Promise.all([readFile(pki.caCert, 'utf8'), readFile(pki.adminCert, 'utf8'), readFile(pki.adminKey, 'utf8')]);
  return { ca, cert, key };
}

// ---------------------------------------------------------------------------------------------
// Probes and waiting

/**
 * Polls probe until it returns true. Fails early, naming the component, when its process has
 * exited; fails with the log tail on timeout. Probe exceptions (connection refused while the
 * component boots) count as "not yet".
 */
async function waitUntil(
  component: Component,
  what: string,
  daemons: Map<Component, Daemon>,
  dir: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    if (signal.aborted) throw new Error(`stopped waiting for ${component}: another component failed`);
    // Any component dying breaks everything after it; report the one that died, not the waiter.
    for (const [c, d] of daemons) {
      if (d.exited) {
        const how = d.exited.signal ? `signal ${d.exited.signal}` : `code ${String(d.exited.code)}`;
        throw new ComponentStartError(c, `process exited with ${how}`, tail(logFileOf(dir, c)), logFileOf(dir, c));
      }
    }
    try {
      if (await probe()) return;
    } catch (err) {
      last = errorMessage(err);
    }
    if (Date.now() > deadline) {
      throw new ComponentStartError(component, `not ${what} after ${String(timeoutMs / 1000)} s (last probe: ${last})`, tail(logFileOf(dir, component)), logFileOf(dir, component));
    }
    await sleep(100);
  }
}

async function etcdHealthy(port: number): Promise<boolean> {
  const r = await fetchText(`http://127.0.0.1:${String(port)}/health`, { timeoutMs: 2000 });
  return r.status === 200 && (JSON.parse(r.body) as { health?: string }).health === 'true';
}

async function apiReady(api: string, tls: TlsIdentity): Promise<boolean> {
  return (await fetchText(`${api}/readyz`, { tls, timeoutMs: 2000 })).status === 200;
}

async function healthz(url: string): Promise<boolean> {
  return (await fetchText(url, { timeoutMs: 2000 })).status === 200;
}

async function createNode(api: string, tls: TlsIdentity): Promise<void> {
  // Room for a 1000-release benchmark whose rolling upgrades briefly need two pods per release.
  const resources = { cpu: '32', memory: '256Gi', pods: '3000' };
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: NODE_NAME,
      // kwok.x-k8s.io/node: the convention kwok's own tooling uses to mark its nodes.
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { type: 'kwok', 'kubernetes.io/hostname': NODE_NAME, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
    },
    // No taints: a NoSchedule taint would keep ordinary test pods (and charts) off the node.
    spec: {},
    // Nodes may set status on create; the scheduler needs allocatable before kwok's first update.
    status: { allocatable: resources, capacity: resources },
  };
  const r = await fetchText(`${api}/api/v1/nodes`, { method: 'POST', body: node, tls });
  if (r.status !== 201) throw new ComponentStartError('node', `creating Node ${NODE_NAME} answered ${String(r.status)}: ${r.body}`, '', '(API response)');
}

interface NodeView {
  spec?: { taints?: { key: string; effect: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

async function nodeSchedulable(api: string, tls: TlsIdentity): Promise<boolean> {
  const r = await fetchText(`${api}/api/v1/nodes/${NODE_NAME}`, { tls });
  if (r.status !== 200) return false;
  const node = JSON.parse(r.body) as NodeView;
  const isReady = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const blocked = node.spec?.taints?.some((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute') ?? false;
  return isReady && !blocked;
}

async function serverVersion(api: string, tls: TlsIdentity): Promise<string> {
  const r = await fetchText(`${api}/version`, { tls });
  const version = (JSON.parse(r.body) as { gitVersion?: string }).gitVersion ?? '';
  // An unstamped build says v0.0.0-master+$Format:%H$, and Helm then rejects every chart with a
  // kubeVersion constraint: fail here, loudly, rather than in some chart test later.
  if (!/^v1\.\d+\.\d+/.test(version)) {
    throw new ComponentStartError('kube-apiserver', `/version reports '${version}': the binary was built without version stamping (see provision.sh)`, '', '(API response)');
  }
  return version;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Free loopback ports, all distinct, below the ephemeral range (ports.ts says why). */
async function pickPorts(): Promise<Ports> {
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = (await freePorts(6)) as [number, number, number, number, number, number];
  return { etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok };
}

// Unique temp names: launches run in parallel and each rewrites the pid files.
const tmpName = (file: string): string => `${file}.${randomBytes(6).toString('hex')}.tmp`;

async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = tmpName(file);
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(tmp, file);
}

async function writePids(dir: string, pids: Pids): Promise<void> {
  await writeJsonAtomic(join(dir, 'pids.json'), pids);
  const plain = COMPONENTS.map((c) => pids[c]).filter((p) => p !== undefined).join('\n');
  const tmp = tmpName(join(dir, 'pids'));
  await writeFile(tmp, `${plain}\n`);
  await rename(tmp, join(dir, 'pids'));
}
