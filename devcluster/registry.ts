// A real OCI registry on loopback next to the control plane: the CNCF distribution `registry`
// (built by provision.sh), with TLS from a CA of its own and htpasswd (bcrypt) basic auth, its
// data in a state dir so it can be stopped and started again on the same port with the same
// charts (fault tests: "the registry is down"). Charts are pushed to it with the real `helm push`.
//
// The state dir holds: pki/ (ca.crt, server.crt/key), htpasswd, config.yml, data/,
// registry.log (one access-log line per request), pids (for the reaper).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcryptjs';
import { stringify } from 'yaml';
import { makeServerPki } from './certs.js';
import { fetchText } from './http.js';
import { defaultBinDir } from './paths.js';
import { isOurs, killReaper, spawnDaemon, spawnReaper, tail, terminate, type Daemon } from './processes.js';
import { freePort } from './ports.js';
import { provision } from './provision.js';

export interface RegistryOptions {
  /** State dir; created if missing. */
  readonly dir: string;
  /** Directory holding the `registry` binary (provision.sh's bin dir by default). */
  readonly binDir?: string;
  /** User name → password for htpasswd basic auth; at least one. */
  readonly users: Readonly<Record<string, string>>;
  /** Whose death stops the registry (a detached reaper); default this process. */
  readonly ownerPid?: number;
  /** Lines of a build of the registry binary when it must be built first; default stderr. */
  readonly log?: (line: string) => void;
}

export interface Registry {
  readonly dir: string;
  /** `127.0.0.1:<port>`, as `oci://` references name it. */
  readonly host: string;
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** The CA that signed the registry's certificate (PEM file). */
  readonly caFile: string;
  /** Stops the registry; its data stays, so `start` brings the same charts back. */
  stop(): Promise<void>;
  /** Starts it again on the same port (after `stop`). */
  start(): Promise<void>;
  /** Stops it and deletes the state dir. */
  destroy(): Promise<void>;
  /** Requests the registry has answered so far (its access log), e.g. to count what a refresh costs. */
  requests(): string[];
}

/** Starts a registry in opts.dir and resolves once it answers on /v2/. */
export async function startRegistry(opts: RegistryOptions): Promise<Registry> {
  const dir = resolve(opts.dir);
  let bin = join(resolve(opts.binDir ?? defaultBinDir()), 'registry');
  // Not part of provision.sh's default (only registry tests and the bench's OCI source need it):
  // built here on first use, or awaited when a concurrent provision is building it.
  if (!existsSync(bin)) bin = join(await provision({ components: ['registry'], ...(opts.log === undefined ? {} : { log: opts.log }) }), 'registry');
  await mkdir(join(dir, 'data'), { recursive: true });
  const pki = await makeServerPki(join(dir, 'pki'), 'registry');
  const htpasswd = Object.entries(opts.users).map(([user, password]) => `${user}:${bcrypt.hashSync(password, 10)}`);
  if (htpasswd.length === 0) throw new Error('a registry needs at least one user');
  await writeFile(join(dir, 'htpasswd'), `${htpasswd.join('\n')}\n`, { mode: 0o600 });
  const port = await freePort();
  const host = `127.0.0.1:${String(port)}`;
  const config = {
    version: 0.1,
    log: { level: 'warn', formatter: 'text', accesslog: { disabled: false } },
    storage: { filesystem: { rootdirectory: join(dir, 'data') }, delete: { enabled: true } },
    http: { addr: host, secret: randomBytes(16).toString('hex'), tls: { certificate: pki.serverCert, key: pki.serverKey } },
    auth: { htpasswd: { realm: 'chartpilot-registry', path: join(dir, 'htpasswd') } },
  };
  const configFile = join(dir, 'config.yml');
  await writeFile(configFile, stringify(config));
  const logFile = join(dir, 'registry.log');
  const ownerPid = opts.ownerPid ?? process.pid;
  let reaper: number | undefined;
  let daemon: Daemon | undefined;

  const start = async (): Promise<void> => {
    daemon = spawnDaemon(bin, ['serve', configFile], logFile);
    await writeFile(join(dir, 'pids'), `${String(daemon.pid)}\n`);
    reaper ??= spawnReaper(ownerPid, dir);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (daemon.exited !== undefined) throw new Error(`registry exited at start:\n${tail(logFile)}`);
      // 401 without credentials: up, and asking for them.
      const status = await fetchText(`https://${host}/v2/`, { timeoutMs: 2000 }).then((r) => r.status, () => 0);
      if (status === 401) return;
      if (Date.now() > deadline) throw new Error(`registry not answering on https://${host}/v2/ after 30 s:\n${tail(logFile)}`);
      await sleep(50);
    }
  };
  const stop = async (): Promise<void> => {
    if (daemon !== undefined) await terminate([daemon.pid], dir, 2000);
    daemon = undefined;
  };

  await start();
  return {
    dir,
    host,
    url: `https://${host}`,
    caFile: pki.caCert,
    start,
    stop,
    destroy: async () => {
      await stop();
      if (reaper !== undefined && isOurs(reaper, dir)) killReaper(reaper, dir);
      await rm(dir, { recursive: true, force: true });
    },
    requests: () => {
      let text = '';
      try {
        text = readFileSync(logFile, 'utf8');
      } catch {
        return [];
      }
      return text.split('\n').filter((l) => / "(GET|HEAD|PUT|POST|PATCH|DELETE) \/v2\//.test(l));
    },
  };
}
