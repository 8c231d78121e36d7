/**
 * HTTP to a registry or chart repository: a connection pool per CA bundle, a deadline per
 * request, and the registry auth dance — Basic, or a Bearer token fetched from the realm the
 * registry names (OCI distribution's token auth, as Docker Hub, GHCR, Harbor use), cached until
 * it expires. Once a host is known to take Basic, credentials go with the first request, so an
 * unchanged refresh costs no 401 round trip. Failures become ChartSourceErrors whose message
 * names the host and what was tried.
 */
import { rootCertificates } from 'node:tls';
import { Agent, fetch, type Dispatcher, type Response } from 'undici';
import { errorWithCause } from '../lib/errors.js';
import type { Access } from './credentials.js';
import { ChartSourceError } from './errors.js';

export const REQUEST_TIMEOUT_MS = 30_000;
export const DOWNLOAD_TIMEOUT_MS = 120_000;

export interface RequestSpec {
  readonly method?: 'GET' | 'HEAD';
  readonly accept?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** OCI token scope, e.g. `repository:charts/webapp:pull` (used when the challenge names none). */
  readonly scope?: string;
  readonly timeoutMs?: number;
  /** Statuses returned to the caller instead of thrown (404 for "not found", 304 for "not modified"). */
  readonly pass?: readonly number[];
}

interface Token {
  readonly value: string;
  readonly expiresAt: number;
}

/** One Access (credentials + CA) to one host; cheap to keep per remote chart. */
export class RegistryHttp {
  private readonly dispatcher: Dispatcher;
  /** The host answered a Basic challenge: send credentials up front from now on. */
  private basic = false;
  private readonly tokens = new Map<string, Token>();

  constructor(
    private readonly access: Access,
    /** How messages name the server, e.g. `registry 127.0.0.1:5000`. */
    private readonly label: string,
    private readonly onRequest?: (method: string, url: string, status: number) => void,
  ) {
    this.dispatcher = new Agent({
      connect: access.ca === undefined ? {} : { ca: [...rootCertificates, access.ca] },
      keepAliveTimeout: 5_000,
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.dispatcher.close(), this.withoutCredentials?.close()]);
  }

  private withoutCredentials: RegistryHttp | undefined;

  /** The same server trust without credentials (for downloads from another host). */
  anonymous(): RegistryHttp {
    this.withoutCredentials ??= new RegistryHttp({ ...this.access, credentials: undefined, origin: 'no credentials' }, this.label, this.onRequest);
    return this.withoutCredentials;
  }

  /** A response with status 2xx (or one in `pass`); anything else throws a ChartSourceError. */
  async fetch(url: string, spec: RequestSpec = {}): Promise<Response> {
    let res = await this.send(url, spec, this.authorization(spec.scope));
    if (res.status === 401) {
      const challenge = res.headers.get('www-authenticate') ?? '';
      await res.body?.cancel();
      const auth = await this.answer(challenge, spec);
      if (auth !== undefined) res = await this.send(url, spec, auth);
    }
    if (res.ok || spec.pass?.includes(res.status) === true) return res;
    const text = (await res.text().catch(() => '')).slice(0, 300).trim();
    const method = spec.method ?? 'GET';
    const path = new URL(url).pathname;
    if (res.status === 401 || res.status === 403) {
      throw new ChartSourceError(
        'RegistryUnauthorized',
        `${this.label} answered ${String(res.status)} ${res.status === 401 ? 'Unauthorized' : 'Forbidden'} to ${method} ${path} with ${this.access.origin}; ` +
          (this.access.credentials === undefined
            ? 'name a Secret with credentials in chartPullSecret, or log in with helm registry login / helm repo add --username'
            : 'check the user name and password (and that this user may pull this chart)'),
      );
    }
    if (res.status >= 500) {
      throw new ChartSourceError('RegistryUnreachable', `${this.label} answered ${String(res.status)} to ${method} ${path}${text === '' ? '' : `: ${text}`}`);
    }
    if (res.status === 404) throw new ChartSourceError('ChartNotFound', `${this.label} has no ${path} (404)`);
    throw new ChartSourceError('RegistryUnreachable', `${this.label} answered ${String(res.status)} to ${method} ${path}${text === '' ? '' : `: ${text}`}`);
  }

  private async send(url: string, spec: RequestSpec, authorization: string | undefined): Promise<Response> {
    const method = spec.method ?? 'GET';
    const headers: Record<string, string> = { 'User-Agent': 'chartpilot', ...spec.headers };
    if (spec.accept !== undefined) headers['Accept'] = spec.accept;
    if (authorization !== undefined) headers['Authorization'] = authorization;
    try {
      const res = await fetch(url, { method, headers, dispatcher: this.dispatcher, signal: AbortSignal.timeout(spec.timeoutMs ?? REQUEST_TIMEOUT_MS) });
      this.onRequest?.(method, url, res.status);
      return res;
    } catch (err) {
      this.onRequest?.(method, url, 0);
      const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${String((spec.timeoutMs ?? REQUEST_TIMEOUT_MS) / 1000)} s` : errorWithCause(err);
      throw new ChartSourceError('RegistryUnreachable', `${this.label} is unreachable (${method} ${new URL(url).pathname}: ${why})`, { cause: err });
    }
  }

  private basicHeader(): string | undefined {
    const c = this.access.credentials;
    return c === undefined ? undefined : `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
  }

  /** What to send before any challenge: a cached token for the scope, or Basic when the host takes it. */
  private authorization(scope: string | undefined): string | undefined {
    const token = this.tokens.get(scope ?? '');
    if (token !== undefined && token.expiresAt > Date.now()) return `Bearer ${token.value}`;
    return this.basic ? this.basicHeader() : undefined;
  }

  /** The Authorization answering a 401 challenge, or undefined when there is nothing to try. */
  private async answer(challenge: string, spec: RequestSpec): Promise<string | undefined> {
    const scheme = challenge.split(' ', 1)[0]?.toLowerCase() ?? '';
    if (scheme === 'basic') {
      this.basic = true;
      return this.basicHeader();
    }
    if (scheme !== 'bearer') return this.basicHeader();
    const params = parseChallenge(challenge.slice(challenge.indexOf(' ') + 1));
    const realm = params.get('realm');
    if (realm === undefined) return undefined;
    const tokenUrl = new URL(realm);
    const service = params.get('service');
    if (service !== undefined) tokenUrl.searchParams.set('service', service);
    const scope = params.get('scope') ?? spec.scope;
    if (scope !== undefined) tokenUrl.searchParams.set('scope', scope);
    const res = await this.send(tokenUrl.toString(), { accept: 'application/json' }, this.basicHeader());
    if (!res.ok) {
      await res.body?.cancel();
      return undefined; // the original request fails again with the registry's own 401
    }
    const body = (await res.json().catch(() => ({}))) as { token?: string; access_token?: string; expires_in?: number };
    const value = body.token ?? body.access_token;
    if (value === undefined) return undefined;
    // Tokens live 60 s unless the server says otherwise; renew a little early.
    this.tokens.set(spec.scope ?? '', { value, expiresAt: Date.now() + Math.max(10, (body.expires_in ?? 60) - 10) * 1000 });
    return `Bearer ${value}`;
  }
}

/** `realm="…",service="…",scope="…"` → its parameters. */
export function parseChallenge(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/([a-zA-Z_]+)="([^"]*)"/gu)) {
    if (m[1] !== undefined && m[2] !== undefined) out.set(m[1].toLowerCase(), m[2]);
  }
  return out;
}
