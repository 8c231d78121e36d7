/**
 * Where the cluster is and how to authenticate to it: kubeconfig files (KUBECONFIG, else
 * ~/.kube/config) or the in-cluster service account.
 *
 * client-node parses the kubeconfig entries and does the authentication (exec plugins with their
 * credential cache, token files, the legacy auth providers). We do not load its KubeConfig class:
 * that module pulls in the whole generated API client, which measured 68 MiB of RSS and 0.6 s of
 * start-up for code the operator never calls. The auth providers are imported only when the
 * kubeconfig uses them (OIDC alone costs another 70 MiB).
 */
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isIPv6 } from 'node:net';
import { newClusters, newContexts, newUsers, type Cluster, type Context, type User } from '@kubernetes/client-node/dist/config_types.js';
import { parse } from 'yaml';
import { errorMessage } from '../lib/errors.js';

export type { Cluster, User } from '@kubernetes/client-node/dist/config_types.js';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** TLS settings for the connection pool. Files are read when called, so rotated ones are picked up. */
export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer | string;
  key?: Buffer | string;
  servername?: string;
  /** Only when the kubeconfig says insecure-skip-tls-verify. */
  rejectUnauthorized?: false;
}

export interface Credentials {
  /** Authorization and impersonation headers. */
  headers: Record<string, string>;
  /** A client certificate from an exec plugin; it replaces the kubeconfig's. */
  cert?: Buffer | string;
  key?: Buffer | string;
}

export interface KubeConnection {
  /** API server URL without a trailing slash. */
  readonly server: string;
  readonly contextName: string;
  /** The context's namespace, or the service account's. */
  readonly namespace: string | undefined;
  readonly proxyUrl: string | undefined;
  readonly cluster: Cluster;
  readonly user: User;
  tls(): TlsSettings;
  /** Fresh per request: tokens expire and exec plugins refresh. */
  credentials(): Promise<Credentials>;
}

export interface KubeConfigSource {
  /** Kubeconfig files, merged like kubectl: for each name the first file that has it wins. */
  files?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Root for the service-account files (tests). */
  serviceAccountDir?: string;
}

/** Loads KUBECONFIG, else ~/.kube/config, else the in-cluster service account. */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConnection {
  const env = source.env ?? process.env;
  const files = source.files ?? defaultFiles(env);
  if (files.length > 0) return fromFiles(files);
  const saDir = source.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_PORT !== undefined && readable(join(saDir, 'token'))) {
    return inCluster(env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT, saDir);
  }
  throw new Error('no Kubernetes cluster configured: set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account');
}

function defaultFiles(env: NodeJS.ProcessEnv): string[] {
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (list.length > 0) return list;
  const home = env.HOME ?? homedir();
  const file = join(home, '.kube', 'config');
  return readable(file) ? [file] : [];
}

function readable(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}

interface Parsed {
  clusters: Cluster[];
  users: User[];
  contexts: Context[];
  currentContext: string | undefined;
}

function parseFile(file: string): Parsed {
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read kubeconfig ${file}: ${errorMessage(err)}`, { cause: err });
  }
  if (doc === null || doc === undefined) return { clusters: [], users: [], contexts: [], currentContext: undefined };
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`kubeconfig ${file} is not a mapping`);
  const raw = doc as Record<string, unknown>;
  const base = dirname(file);
  try {
    const clusters = newClusters(raw.clusters ?? []).map((c) => (c.caFile ? { ...c, caFile: absolute(base, c.caFile) } : c));
    const rawUsers = Array.isArray(raw.users) ? (raw.users as unknown[]) : [];
    // client-node would read token-file once, relative to the working directory; we read it
    // relative to this file and re-read it (tokens rotate), so it is taken out before parsing.
    const tokenFiles = rawUsers.map((u) => tokenFileOf(u));
    const withoutTokenFiles = rawUsers.map((u, i) => (tokenFiles[i] === undefined ? u : withoutTokenFile(u)));
    const users = newUsers(Array.isArray(raw.users) ? withoutTokenFiles : (raw.users ?? [])).map((u, i) => resolveUser(u, tokenFiles[i], base));
    const current = raw['current-context'];
    return { clusters, users, contexts: newContexts(raw.contexts ?? []), currentContext: typeof current === 'string' && current !== '' ? current : undefined };
  } catch (err) {
    throw new Error(`kubeconfig ${file}: ${errorMessage(err)}`, { cause: err });
  }
}

function tokenFileOf(rawUser: unknown): string | undefined {
  const user = (rawUser as { user?: Record<string, unknown> } | null | undefined)?.user;
  const file = user?.['token-file'];
  return typeof file === 'string' && file !== '' && !user?.token ? file : undefined;
}

function withoutTokenFile(rawUser: unknown): unknown {
  const entry = rawUser as { user: Record<string, unknown> };
  const { 'token-file': _dropped, ...user } = entry.user;
  return { ...entry, user };
}

/** Relative paths are relative to the kubeconfig file; a token file is re-read, not read once. */
function resolveUser(user: User, tokenFile: string | undefined, base: string): User {
  const resolved: { -readonly [K in keyof User]: User[K] } = { ...user };
  if (user.certFile) resolved.certFile = absolute(base, user.certFile);
  if (user.keyFile) resolved.keyFile = absolute(base, user.keyFile);
  if (tokenFile !== undefined) resolved.authProvider = { name: 'tokenFile', config: { tokenFile: absolute(base, tokenFile) } };
  return resolved;
}

function absolute(base: string, file: string): string {
  return isAbsolute(file) ? file : join(base, file);
}

function fromFiles(files: readonly string[]): KubeConnection {
  const merged: Parsed = { clusters: [], users: [], contexts: [], currentContext: undefined };
  const firstWins = <T extends { name: string }>(into: T[], from: T[]): void => {
    for (const e of from) if (!into.some((x) => x.name === e.name)) into.push(e);
  };
  for (const file of files) {
    const p = parseFile(file);
    firstWins(merged.clusters, p.clusters);
    firstWins(merged.users, p.users);
    firstWins(merged.contexts, p.contexts);
    merged.currentContext ??= p.currentContext;
  }
  const where = files.join(delimiter);
  if (merged.currentContext === undefined) throw new Error(`kubeconfig ${where} has no current-context: set one with kubectl config use-context`);
  const context = merged.contexts.find((c) => c.name === merged.currentContext);
  if (context === undefined) throw new Error(`kubeconfig ${where}: current-context "${merged.currentContext}" is not defined`);
  const cluster = merged.clusters.find((c) => c.name === context.cluster);
  if (cluster === undefined) throw new Error(`kubeconfig ${where}: context "${context.name}" names cluster "${context.cluster}", which is not defined`);
  // kubectl allows a context without a user (anonymous requests).
  const user = merged.users.find((u) => u.name === context.user) ?? { name: '' };
  return kubeConnection(cluster, user, context.name, context.namespace);
}

function inCluster(host: string, port: string, saDir: string): KubeConnection {
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const cluster: Cluster = { name: 'in-cluster', server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(saDir, 'ca.crt'), skipTLSVerify: false };
  // Projected tokens rotate: the token file is re-read rather than kept.
  const user: User = { name: 'in-cluster', authProvider: { name: 'tokenFile', config: { tokenFile: join(saDir, 'token') } } };
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(saDir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    namespace = undefined;
  }
  return kubeConnection(cluster, user, 'in-cluster', namespace);
}

/** The subset of client-node's Authenticator we call. */
interface Authenticator {
  applyAuthentication(user: User, opts: https.RequestOptions): Promise<void>;
}

/** The authenticator a user needs, loaded on first use (most kubeconfigs need none or exec only). */
async function loadAuthenticator(user: User): Promise<Authenticator | undefined> {
  // client-node's parser leaves null, not undefined, where a kubeconfig has no auth-provider.
  const provider = user.authProvider as { name?: unknown; config?: { tokenFile?: unknown } } | null | undefined;
  if (user.exec) return new (await import('@kubernetes/client-node/dist/exec_auth.js')).ExecAuth();
  if (provider === undefined || provider === null) return undefined;
  if (typeof provider.config?.tokenFile === 'string') return new (await import('@kubernetes/client-node/dist/file_auth.js')).FileAuth();
  switch (provider.name) {
    case 'oidc':
      return new (await import('@kubernetes/client-node/dist/oidc_auth.js')).OpenIDConnectAuth();
    case 'azure':
      return new (await import('@kubernetes/client-node/dist/azure_auth.js')).AzureAuth();
    case 'gcp':
      return new (await import('@kubernetes/client-node/dist/gcp_auth.js')).GoogleCloudPlatformAuth();
    default:
      throw new Error(`auth-provider "${String(provider.name)}" is not supported: use an exec credential plugin instead`);
  }
}

function fileOrData(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}

/** A connection for one cluster and user (also what tests build directly). */
export function kubeConnection(cluster: Cluster, user: User, contextName = 'default', namespace?: string): KubeConnection {
  if (!cluster.server) throw new Error(`cluster "${cluster.name}" has no server`);
  if (cluster.proxyUrl?.startsWith('socks')) {
    throw new Error(`cluster "${cluster.name}": SOCKS proxies (proxy-url ${cluster.proxyUrl}) are not supported; use an HTTP(S) proxy`);
  }
  let authenticator: Promise<Authenticator | undefined> | undefined;
  return {
    server: cluster.server.replace(/\/+$/, ''),
    contextName,
    namespace,
    proxyUrl: cluster.proxyUrl,
    cluster,
    user,
    tls() {
      const tls: TlsSettings = {};
      const ca = fileOrData(cluster.caFile, cluster.caData);
      if (ca) tls.ca = ca;
      const cert = fileOrData(user.certFile, user.certData);
      if (cert) tls.cert = cert;
      const key = fileOrData(user.keyFile, user.keyData);
      if (key) tls.key = key;
      if (cluster.tlsServerName) tls.servername = cluster.tlsServerName;
      if (cluster.skipTLSVerify) tls.rejectUnauthorized = false;
      return tls;
    },
    async credentials() {
      const opts: https.RequestOptions & { headers: Record<string, string> } = { headers: {} };
      if (user.username) opts.headers.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
      authenticator ??= loadAuthenticator(user);
      const auth = await authenticator;
      if (auth) await auth.applyAuthentication(user, opts);
      if (user.token) opts.headers.Authorization = `Bearer ${user.token}`;
      if (user.impersonateUser) opts.headers['Impersonate-User'] = user.impersonateUser;
      const out: Credentials = { headers: opts.headers };
      if (opts.cert) out.cert = opts.cert as Buffer | string;
      if (opts.key) out.key = opts.key as Buffer | string;
      return out;
    },
  };
}
