/**
 * Where a registry's credentials and CA come from, parsed (pure): a Secret named by
 * `chartPullSecret` (`kubernetes.io/dockerconfigjson` for OCI, `kubernetes.io/basic-auth` or
 * `username`/`password` keys for repositories, an optional `ca.crt` for either), else Helm's own
 * registry config (`helm registry login`) or repositories file (`helm repo add --username`),
 * mounted or written where Helm would look. The values never leave this module's callers except
 * as request headers; messages name where credentials came from and the user, never the password.
 */
import { isMap, parseDocument } from 'yaml';
import type { RemoteChart } from '../config/types.js';
import { isPlainObject } from '../lib/json.js';

export interface BasicCredentials {
  readonly username: string;
  readonly password: string;
}

/** How to reach one registry: credentials (or none) and extra trusted CAs. */
export interface Access {
  readonly credentials: BasicCredentials | undefined;
  /** PEM CA certificates trusted in addition to the system's. */
  readonly ca: string | undefined;
  /** For messages: where the credentials came from and whose they are (never the password). */
  readonly origin: string;
}

export const ANONYMOUS: Access = { credentials: undefined, ca: undefined, origin: 'no credentials' };

/** A Secret as the API returns it (`data` values base64). */
export interface SecretData {
  readonly type?: string | undefined;
  readonly data?: Readonly<Record<string, string>> | undefined;
}

export type AccessResult = { ok: true; access: Access } | { ok: false; problem: string };

const decode = (b64: string): string => Buffer.from(b64, 'base64').toString('utf8');

/** The registry host of an `auths` key: `https://host/v1/`, `host`, `http://host:5000` all name `host`. */
export function authsHost(key: string): string {
  return key.replace(/^[a-z]+:\/\//iu, '').replace(/\/.*$/u, '').toLowerCase();
}

/** Credentials for `host` in a Docker/Helm registry config (`{"auths": {…}}`), if it has any. */
export function fromDockerConfig(json: string, host: string): BasicCredentials | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  const auths = isPlainObject(parsed) && isPlainObject(parsed['auths']) ? parsed['auths'] : {};
  const wanted = host.toLowerCase();
  for (const [key, value] of Object.entries(auths)) {
    if (authsHost(key) !== wanted || !isPlainObject(value)) continue;
    const auth = value['auth'];
    if (typeof auth === 'string' && auth !== '') {
      const text = decode(auth);
      const colon = text.indexOf(':');
      if (colon > 0) return { username: text.slice(0, colon), password: text.slice(colon + 1) };
    }
    const username = value['username'];
    const password = value['password'];
    if (typeof username === 'string' && typeof password === 'string' && username !== '') return { username, password };
  }
  return undefined;
}

/** The host a remote chart's credentials are looked up by. */
export function credentialHost(remote: RemoteChart): string {
  return remote.type === 'oci' ? remote.location : new URL(remote.location).host;
}

/** What the Secret `label` (`namespace/name`) gives for `remote`. */
export function fromSecret(secret: SecretData, label: string, remote: RemoteChart): AccessResult {
  const data = secret.data ?? {};
  const ca = data['ca.crt'] === undefined ? undefined : decode(data['ca.crt']);
  const host = credentialHost(remote);
  const config = data['.dockerconfigjson'] ?? data['.dockercfg'];
  if (config !== undefined) {
    const text = decode(config);
    // .dockercfg is the old format: the auths map itself.
    const creds = fromDockerConfig(data['.dockerconfigjson'] === undefined ? JSON.stringify({ auths: JSON.parse(text) as unknown }) : text, host);
    if (creds === undefined) {
      return { ok: false, problem: `Secret ${label} has registry credentials, but none for ${host}; add an entry for ${host} to its .dockerconfigjson (kubectl create secret docker-registry --docker-server=${host} …)` };
    }
    return { ok: true, access: { credentials: creds, ca, origin: `Secret ${label} (user ${creds.username})` } };
  }
  const username = data['username'] === undefined ? undefined : decode(data['username']);
  const password = data['password'] === undefined ? undefined : decode(data['password']);
  if (username !== undefined && password !== undefined) {
    return { ok: true, access: { credentials: { username, password }, ca, origin: `Secret ${label} (user ${username})` } };
  }
  if (ca !== undefined && username === undefined && password === undefined) {
    return { ok: true, access: { credentials: undefined, ca, origin: `Secret ${label} (a CA only, no credentials)` } };
  }
  return {
    ok: false,
    problem:
      `Secret ${label} holds neither registry credentials nor a CA: give it .dockerconfigjson (type kubernetes.io/dockerconfigjson), ` +
      'or username and password (type kubernetes.io/basic-auth), and/or ca.crt',
  };
}

/** A `helm repo add` entry of Helm's repositories.yaml for `url`: credentials and CA file, if any. */
export function fromHelmRepositories(yamlText: string, url: string): { credentials: BasicCredentials | undefined; caFile: string | undefined; name: string } | undefined {
  const doc = parseDocument(yamlText);
  if (doc.errors.length > 0 || !isMap(doc.contents)) return undefined;
  const repos = (doc.toJS() as { repositories?: unknown }).repositories;
  if (!Array.isArray(repos)) return undefined;
  const want = url.replace(/\/+$/u, '');
  for (const r of repos as unknown[]) {
    if (!isPlainObject(r) || typeof r['url'] !== 'string' || r['url'].replace(/\/+$/u, '') !== want) continue;
    const username = typeof r['username'] === 'string' && r['username'] !== '' ? r['username'] : undefined;
    const password = typeof r['password'] === 'string' ? r['password'] : '';
    return {
      name: typeof r['name'] === 'string' ? r['name'] : want,
      credentials: username === undefined ? undefined : { username, password },
      caFile: typeof r['caFile'] === 'string' && r['caFile'] !== '' ? r['caFile'] : undefined,
    };
  }
  return undefined;
}

/** Where Helm keeps its registry config and repositories file (HELM_* and XDG variables as Helm reads them). */
export function helmConfigFiles(env: Readonly<Record<string, string | undefined>>, home: string): { registryConfig: string; repositoryConfig: string } {
  const configHome = env['HELM_CONFIG_HOME'] ?? `${env['XDG_CONFIG_HOME'] ?? `${home}/.config`}/helm`;
  return {
    registryConfig: env['HELM_REGISTRY_CONFIG'] ?? `${configHome}/registry/config.json`,
    repositoryConfig: env['HELM_REPOSITORY_CONFIG'] ?? `${configHome}/repositories.yaml`,
  };
}
