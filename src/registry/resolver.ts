/**
 * From a watches entry's chart reference to an archive on disk: resolve the version constraint
 * against what the registry has, check the pinned digest, pull the archive once into the
 * content-addressed cache (verified: digest, gzip, tar, Chart.yaml name and version) and say
 * which archive it is. A refresh that finds the same content as `current` returns it after the
 * listing and one digest lookup, without downloading anything; it never runs helm.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import type { RemoteChart } from '../config/types.js';
import { readChartArchive } from '../config/chart-check.js';
import { asSemver, pickVersion, satisfies } from '../config/chart-version.js';
import { errorMessage } from '../lib/errors.js';
import { ChartCache, type CachedVersion } from './cache.js';
import { ANONYMOUS, credentialHost, fromDockerConfig, fromHelmRepositories, fromSecret, helmConfigFiles, type Access, type SecretData } from './credentials.js';
import { ChartSourceError } from './errors.js';
import { RepoChart } from './helm-repo.js';
import { RegistryHttp } from './http.js';
import { OciChart } from './oci.js';

export interface ResolvedChart {
  readonly reference: string;
  readonly version: string;
  /** `sha256:<hex>` of the archive: its name in the cache and the chart digest of the fingerprint. */
  readonly digest: string;
  /** oci: the manifest digest of the version's tag; repository: the digest index.yaml lists (if any). */
  readonly announced: string | undefined;
  /** The archive in the cache, what helm installs from. */
  readonly path: string;
}

/** Reads a Secret; resolves undefined when it does not exist, rejects with the API's error otherwise. */
export type SecretReader = (namespace: string, name: string) => Promise<SecretData | undefined>;

export interface ResolverOptions {
  readonly cache: ChartCache;
  readonly readSecret: SecretReader;
  /** The operator's own namespace, where chartPullSecret Secrets are read; undefined outside a pod without POD_NAMESPACE. */
  readonly secretNamespace: string | undefined;
  /** For Helm's own registry config and repositories file (HELM_REGISTRY_CONFIG, …). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Every HTTP request made (for metrics and the debug log). */
  readonly onRequest?: (method: string, url: string, status: number) => void;
}

interface Session {
  /** A digest of the access (credentials + CA): a changed Secret gets a new session. */
  readonly key: string;
  readonly http: RegistryHttp;
  readonly oci: OciChart | undefined;
  readonly repo: RepoChart | undefined;
}

export class ChartResolver {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly opts: ResolverOptions) {}

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.http.close()));
    this.sessions.clear();
  }

  /** Asks the registry. `current` is what runs now: the same content is returned as it is. */
  async resolve(remote: RemoteChart, current?: ResolvedChart): Promise<ResolvedChart> {
    const session = await this.session(remote);
    if (session.oci !== undefined) return this.resolveOci(remote, session.oci, current);
    if (session.repo !== undefined) return this.resolveRepo(remote, session.repo, current);
    throw new Error('unreachable: a session is either oci or repository');
  }

  /** The newest cached archive that satisfies the entry (constraint and pinned digest), for when the registry cannot be asked. */
  async cached(remote: RemoteChart): Promise<ResolvedChart | undefined> {
    const known = await this.opts.cache.recall(remote.reference);
    const fitting = known.filter((v) => satisfies(v.version, remote.version) && (remote.digest === undefined || v.announced === remote.digest || v.blob === remote.digest));
    fitting.sort((a, b) => compareVersions(b.version, a.version));
    for (const v of fitting) if (await this.opts.cache.has(v.blob)) return this.resolved(remote, v);
    return undefined;
  }

  private resolved(remote: RemoteChart, v: CachedVersion): ResolvedChart {
    return { reference: remote.reference, version: v.version, digest: v.blob, announced: v.announced, path: this.opts.cache.blobPath(v.blob) };
  }

  private async resolveOci(remote: RemoteChart, oci: OciChart, current: ResolvedChart | undefined): Promise<ResolvedChart> {
    const tags = await oci.tags();
    const tag = this.pick(remote, tags.map((t) => ({ version: t })), tags.length).version;
    const version = tag.replace(/_/gu, '+');
    const manifestDigest = await oci.manifestDigest(tag);
    if (remote.digest !== undefined && manifestDigest !== remote.digest) {
      throw new ChartSourceError(
        'DigestMismatch',
        `${remote.reference} ${version} has the manifest digest ${manifestDigest}, but chartDigest pins ${remote.digest}; refusing it (pin the digest \`helm push\` printed for that version, or give an exact chartVersion)`,
      );
    }
    if (current !== undefined && current.version === version && current.announced === manifestDigest) return current;
    const known = await this.known(remote, version, manifestDigest);
    if (known !== undefined) return known;
    const manifest = await oci.manifest(manifestDigest);
    const stored = (await this.opts.cache.has(manifest.layer)) ? manifest.layer : await this.store(remote, version, await oci.blob(manifest.layer));
    return this.remember(remote, { version, announced: manifestDigest, blob: stored });
  }

  private async resolveRepo(remote: RemoteChart, repo: RepoChart, current: ResolvedChart | undefined): Promise<ResolvedChart> {
    const entries = await repo.index();
    const entry = this.pick(remote, entries, entries.length);
    if (remote.digest !== undefined && entry.digest !== undefined && entry.digest !== remote.digest) {
      throw new ChartSourceError(
        'DigestMismatch',
        `${remote.reference} ${entry.version} has the digest ${entry.digest} in index.yaml, but chartDigest pins ${remote.digest}; refusing it`,
      );
    }
    // Without a digest in the index only the version tells content apart.
    if (current !== undefined && current.version === entry.version && current.announced === entry.digest) return current;
    if (entry.digest !== undefined) {
      const known = await this.known(remote, entry.version, entry.digest);
      if (known !== undefined) return known;
    }
    const bytes = await repo.download(entry);
    const got = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const expected = entry.digest ?? remote.digest;
    if (expected !== undefined && got !== expected) {
      throw new ChartSourceError(
        'DigestMismatch',
        `${remote.reference} ${entry.version} downloaded as ${got}, but ${entry.digest === undefined ? 'chartDigest pins' : 'index.yaml lists'} ${expected} (truncated, altered, or the index is stale); refusing it`,
      );
    }
    const stored = await this.store(remote, entry.version, bytes);
    return this.remember(remote, { version: entry.version, announced: entry.digest, blob: stored });
  }

  /** The candidate the constraint picks, or a NoMatchingVersion error listing the nearest versions. */
  private pick<T extends { readonly version: string }>(remote: RemoteChart, candidates: readonly T[], total: number): T {
    const picked = pickVersion(candidates, remote.version);
    if (picked.ok) return picked.chosen;
    const wanted = remote.version === undefined ? 'a stable version (none without a prerelease suffix)' : `chartVersion "${remote.version}"`;
    const nearest = picked.nearest.length === 0 ? `it has no versions${total > 0 ? ' that are semver' : ''}` : `the nearest available are ${picked.nearest.join(', ')}`;
    throw new ChartSourceError('NoMatchingVersion', `no version of ${remote.reference} matches ${wanted}; ${nearest}`);
  }

  private async known(remote: RemoteChart, version: string, announced: string): Promise<ResolvedChart | undefined> {
    const hit = (await this.opts.cache.recall(remote.reference)).find((v) => v.version === version && v.announced === announced);
    return hit !== undefined && (await this.opts.cache.has(hit.blob)) ? this.resolved(remote, hit) : undefined;
  }

  /** Checks that the bytes are the chart and version asked for, then caches them; returns their digest. */
  private async store(remote: RemoteChart, version: string, bytes: Buffer): Promise<string> {
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const chart = await readChartArchive(bytes);
    const what = `${remote.reference} ${version} (${digest})`;
    if (!chart.ok) throw new ChartSourceError('InvalidChartArchive', `${what} is not a chart Helm can load: ${chart.problem}; refusing it`);
    const expectedName = remote.name.split('/').at(-1) ?? remote.name;
    if (chart.name !== expectedName) {
      throw new ChartSourceError('InvalidChartArchive', `${what} holds the chart "${chart.name}", not "${expectedName}"; refusing it`);
    }
    const a = asSemver(chart.version);
    const b = asSemver(version);
    if (a === undefined || b === undefined || a.compare(b) !== 0 || a.build.join('.') !== b.build.join('.')) {
      throw new ChartSourceError('InvalidChartArchive', `${what} says it is version ${chart.version} in its Chart.yaml; refusing it`);
    }
    return this.opts.cache.put(bytes);
  }

  private async remember(remote: RemoteChart, v: CachedVersion): Promise<ResolvedChart> {
    await this.opts.cache.remember(remote.reference, v);
    return this.resolved(remote, v);
  }

  private async session(remote: RemoteChart): Promise<Session> {
    const access = await this.access(remote);
    const key = createHash('sha256').update(JSON.stringify([access.credentials, access.ca])).digest('hex');
    // Entries naming the same chart with the same Secret share a session (connections, token, the
    // index's ETag); a changed Secret replaces it.
    const id = `${remote.reference}\n${remote.pullSecret ?? ''}`;
    const existing = this.sessions.get(id);
    if (existing?.key === key) return existing;
    await existing?.http.close();
    const label = remote.type === 'oci' ? `registry ${remote.location}` : `repository ${remote.location}`;
    const http = new RegistryHttp(access, label, this.opts.onRequest);
    const session: Session =
      remote.type === 'oci'
        ? { key, http, oci: new OciChart(http, remote.location, remote.name), repo: undefined }
        : { key, http, oci: undefined, repo: new RepoChart(http, remote.location, remote.name) };
    this.sessions.set(id, session);
    return session;
  }

  /** Credentials and CA: the entry's Secret, else Helm's own files, else none. */
  private async access(remote: RemoteChart): Promise<Access> {
    if (remote.pullSecret !== undefined) return this.secretAccess(remote, remote.pullSecret);
    const files = helmConfigFiles(this.opts.env, homedir());
    if (remote.type === 'oci') {
      const text = await readOptional(files.registryConfig);
      const creds = text === undefined ? undefined : fromDockerConfig(text, credentialHost(remote));
      return creds === undefined ? ANONYMOUS : { credentials: creds, ca: undefined, origin: `Helm registry config ${files.registryConfig} (user ${creds.username})` };
    }
    const text = await readOptional(files.repositoryConfig);
    const repo = text === undefined ? undefined : fromHelmRepositories(text, remote.location);
    if (repo === undefined) return ANONYMOUS;
    const ca = repo.caFile === undefined ? undefined : await readOptional(repo.caFile);
    const who = repo.credentials === undefined ? 'no credentials' : `user ${repo.credentials.username}`;
    return { credentials: repo.credentials, ca, origin: `Helm repositories file ${files.repositoryConfig} (repository ${repo.name}, ${who})` };
  }

  private async secretAccess(remote: RemoteChart, name: string): Promise<Access> {
    const ns = this.opts.secretNamespace;
    if (ns === undefined) {
      throw new ChartSourceError(
        'CredentialsUnavailable',
        `chartPullSecret ${name} is read from the operator's namespace, which is unknown here (not in a pod); set POD_NAMESPACE`,
      );
    }
    let secret: SecretData | undefined;
    try {
      secret = await this.opts.readSecret(ns, name);
    } catch (err) {
      throw new ChartSourceError('CredentialsUnavailable', `cannot read Secret ${ns}/${name} (chartPullSecret): ${errorMessage(err)}; the operator needs get on secrets in ${ns}`, { cause: err });
    }
    if (secret === undefined) {
      throw new ChartSourceError('CredentialsUnavailable', `Secret ${ns}/${name} (chartPullSecret) does not exist; create it in the operator's namespace ${ns}`);
    }
    const r = fromSecret(secret, `${ns}/${name}`, remote);
    if (!r.ok) throw new ChartSourceError('CredentialsUnavailable', r.problem);
    return r.access;
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

function compareVersions(a: string, b: string): number {
  const va = asSemver(a);
  const vb = asSemver(b);
  if (va === undefined || vb === undefined) return a < b ? -1 : a > b ? 1 : 0;
  return va.compare(vb);
}
