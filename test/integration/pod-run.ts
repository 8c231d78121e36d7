// Running an image with podman as a kubelet would run a Deployment's container: the API server
// only through KUBERNETES_SERVICE_HOST/PORT and a mounted ServiceAccount token, and what the
// container's memory cgroup and processes use, read from the host.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { getJson, type TestCluster } from './harness.js';

export interface ApiAccess {
  /** The API server as a pod sees it. */
  readonly host: string;
  readonly port: string;
  /** A service-account directory (token, ca.crt, namespace) readable by any uid. */
  readonly saDir: string;
}

/** The TokenRequest API's token for `namespace/serviceAccount` in `dir`, as the kubelet projects it. */
export async function podApiAccess(cluster: TestCluster, dir: string, namespace: string, serviceAccount: string): Promise<ApiAccess> {
  const config = await getJson<{ clusters: { cluster: { server: string; 'certificate-authority-data'?: string; 'certificate-authority'?: string } }[] }>(cluster, [
    'config', 'view', '--raw', '--minify',
  ]);
  const c = config.clusters[0]?.cluster;
  assert.ok(c !== undefined, 'the kubeconfig names a cluster');
  const server = new URL(c.server);
  const ca = c['certificate-authority-data'] !== undefined ? Buffer.from(c['certificate-authority-data'], 'base64') : readFileSync(c['certificate-authority'] ?? '');
  const token = (await cluster.kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=1h'])).stdout.trim();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(join(dir, 'ca.crt'), ca);
  writeFileSync(join(dir, 'namespace'), namespace);
  // The container runs as the image's user: the files must be readable by it, as a projected volume's are.
  chmodSync(dir, 0o755);
  for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o644);
  return { host: server.hostname, port: server.port || '443', saDir: dir };
}

/** podman run flags for the container spec of operator-sdk's scaffolded manager (config/manager/manager.yaml). */
export function scaffoldPodFlags(api: ApiAccess, limits: { cpu: string; memory: string }): string[] {
  return [
    // The control plane listens on 127.0.0.1.
    '--network=host',
    // resources.limits; no swap, as the kubelet runs pods.
    `--cpus=${limits.cpu}`, `--memory=${limits.memory}`, `--memory-swap=${limits.memory}`,
    // securityContext: allowPrivilegeEscalation false, capabilities drop ALL, seccomp RuntimeDefault;
    // runAsNonRoot with the image's own user (the scaffold names none). Its root filesystem is not
    // read-only and it mounts no volume: neither is added here.
    '--cap-drop=all', '--security-opt', 'no-new-privileges',
    '-e', `KUBERNETES_SERVICE_HOST=${api.host}`, '-e', `KUBERNETES_SERVICE_PORT=${api.port}`,
    '-v', `${api.saDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
  ];
}

/** Whether nothing listens on `port` (any address), so a container on the host's network can bind it. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => { resolve(false); });
    server.listen(port, () => { server.close(() => { resolve(true); }); });
  });
}

export interface ContainerMemory {
  readonly limitMiB: number | undefined;
  readonly usageMiB: number;
  readonly peakMiB: number | undefined;
  readonly oomKills: number;
  /** Anonymous memory and page cache charged to the cgroup. */
  readonly anonMiB: number | undefined;
  readonly fileMiB: number | undefined;
  readonly processes: readonly { pid: number; command: string; rssMiB: number; pssMiB: number; anonMiB: number }[];
}

const mib = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;
const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};
const stat = (text: string | undefined, key: string): number | undefined => {
  const m = new RegExp(`^${key} (\\d+)$`, 'mu').exec(text ?? '');
  return m === null ? undefined : Number(m[1]);
};

/** The memory cgroup of a running container (v1 or v2), read from the host. */
export async function containerMemory(name: string, env: Record<string, string>): Promise<ContainerMemory> {
  const pid = (await execa('podman', ['inspect', '-f', '{{.State.Pid}}', name], { env, extendEnv: false })).stdout.trim();
  const lines = (read(`/proc/${pid}/cgroup`) ?? '').split('\n');
  const v1 = lines.map((l) => l.split(':')).find((f) => f[1]?.split(',').includes('memory'))?.[2];
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  let dir: string;
  let m: Omit<ContainerMemory, 'processes'>;
  if (v1 !== undefined && read(`/sys/fs/cgroup/memory${v1}/memory.usage_in_bytes`) !== undefined) {
    dir = `/sys/fs/cgroup/memory${v1}`;
    const s = read(`${dir}/memory.stat`);
    const limit = Number(read(`${dir}/memory.limit_in_bytes`));
    m = {
      limitMiB: limit < 2 ** 60 ? mib(limit) : undefined,
      usageMiB: mib(Number(read(`${dir}/memory.usage_in_bytes`))),
      peakMiB: mib(Number(read(`${dir}/memory.max_usage_in_bytes`))),
      oomKills: stat(read(`${dir}/memory.oom_control`), 'oom_kill') ?? 0,
      anonMiB: mib(stat(s, 'rss') ?? 0),
      fileMiB: mib(stat(s, 'cache') ?? 0),
    };
  } else {
    dir = `/sys/fs/cgroup${v2 ?? ''}`;
    const s = read(`${dir}/memory.stat`);
    const max = read(`${dir}/memory.max`)?.trim();
    const peak = read(`${dir}/memory.peak`);
    m = {
      limitMiB: max === undefined || max === 'max' ? undefined : mib(Number(max)),
      usageMiB: mib(Number(read(`${dir}/memory.current`))),
      peakMiB: peak === undefined ? undefined : mib(Number(peak)),
      oomKills: stat(read(`${dir}/memory.events`), 'oom_kill') ?? 0,
      anonMiB: mib(stat(s, 'anon') ?? 0),
      fileMiB: mib(stat(s, 'file') ?? 0),
    };
  }
  const processes = (read(`${dir}/cgroup.procs`) ?? '').split('\n').filter((p) => p !== '').map((p) => {
    const rollup = read(`/proc/${p}/smaps_rollup`);
    const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'mu').exec(rollup ?? '')?.[1] ?? 0);
    return {
      pid: Number(p),
      command: (read(`/proc/${p}/cmdline`) ?? '').split('\0').slice(0, 2).join(' '),
      rssMiB: mib(kib('Rss') * 1024),
      pssMiB: mib(kib('Pss') * 1024),
      anonMiB: mib(kib('Anonymous') * 1024),
    };
  });
  return { ...m, processes };
}

export function memoryLine(m: ContainerMemory): string {
  const procs = m.processes.map((p) => `${p.command.split(' ')[0]?.split('/').at(-1) ?? '?'} RSS ${String(p.rssMiB)} PSS ${String(p.pssMiB)} anon ${String(p.anonMiB)}`).join('; ');
  return `cgroup limit ${String(m.limitMiB)} MiB, usage ${String(m.usageMiB)} (anon ${String(m.anonMiB)}, page cache ${String(m.fileMiB)}), peak ${String(m.peakMiB)}, OOM kills ${String(m.oomKills)}; ${procs}`;
}
