/**
 * The confining API layer: the only way helm (every mode) and Ansible runs reach the API server.
 * Each helm call and each Ansible run is a session with its own token (useless once it ends), its
 * CR's identity (impersonating its ServiceAccount when it has one) and its CR's confinement: a
 * write lands only where the URL and the resource's scope from discovery say it is allowed —
 * never decided from what a manifest or a record is believed to say. For helm calls the session
 * also guards helm's release storage (records.ts): records are served only when their MAC proves
 * them, and stamped when helm writes them. For Ansible runs it is ansible-operator's `--proxy-port`
 * server, with owner stamping (--inject-owner-ref).
 *
 * HTTPS, with a certificate made at start that each session's kubeconfig trusts: client-go (helm,
 * kubectl) sends no credentials to a plain-HTTP server.
 *
 *   helm, Ansible ──https://127.0.0.1:<port>, Bearer <session token>──▶ proxy
 *     reads (GET/HEAD, watches): passed through as they stream, as the session's identity
 *       (helm's release storage: read whole, served only when every record is proved)
 *     writes: resource and scope from discovery ─▶ confinement ─▶ record rules and MAC (helm) /
 *             owner stamp (Ansible) ─▶ API server ─▶ the answer is recorded and passed back
 *
 * Bodies are never logged.
 */
import { rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { BodyError, bodyFormat, parseBody, sentContentType } from './body.js';
import { clientHeaders, responseHeaders } from './headers.js';
import { runKubeconfig } from './kubeconfig.js';
import { isOwnerItself, placementOf, stampOwnership, type SessionOwner } from './ownership.js';
import { protobufMeta } from './protobuf-meta.js';
import { decodeProtobufSecret } from './protobuf-secret.js';
import { requestTarget, type ResourceRequest } from './request-info.js';
import { DiscoveryResourceLookup, type ResourceInfo, type ResourceLookup } from './resources.js';
import { SessionRecord, TokenTable, newToken, type SessionObject, type SessionRead } from './sessions.js';
import { sendStatus, statusBody } from './status.js';
import { isRecordName, isStorageQuery, SessionRecords, type SessionRecordsContext } from './records.js';
import { decideWrite, writeVerb, type WriteVerb } from './write-policy.js';
import { isOwnerRef, writtenObjects } from './written.js';
import type { HttpVerb, KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { makeProcessDir } from '../lib/process-dirs.js';
import { clonePlain, getOwn, isPlainMap, type PlainMap } from '../lib/json.js';
import { selfSignedCertificate } from '../observe/certificates.js';
import { ListenError } from '../observe/http-server.js';
import type { Confinement } from '../core/confinement.js';

/** ansible-operator's default `--proxy-port`. */
export const DEFAULT_PROXY_PORT = 8888;
/** Larger write bodies are refused (the API server's own limit is about 3 MiB per object). */
export const MAX_WRITE_BODY_BYTES = 8 * 1024 * 1024;
const MAX_REFUSALS_KEPT = 20;
/** How long the API server's `/version` answer is served from memory. */
const VERSION_TTL_MS = 60_000;
const MAX_CONNECTIONS = 512;

export interface ApiProxyOptions {
  /** The operator's client: its credentials and connection pool carry every forwarded request. */
  readonly client: KubeClient;
  readonly log: Logger;
  /** Port on 127.0.0.1; default 8888 (ansible-operator's); 0 = any free port. */
  readonly port?: number | undefined;
  /** Resource scopes; default: the API server's discovery through `client` (tests substitute a table). */
  readonly resources?: ResourceLookup | undefined;
}

/** One session: a helm process, or an Ansible run. */
export interface SessionContext {
  /** The custom resource the session acts for (its uid is what ownerReferences name). */
  readonly owner: SessionOwner;
  /** Where the session may write: the CR's namespace, and beyond it only as its watches entry allows. */
  readonly confinement: Confinement;
  /**
   * Every request of the session is made as this user (`system:serviceaccount:<ns>:<name>`); the API
   * server adds the ServiceAccount's groups. undefined: the operator's own identity — reads then
   * have the operator's rights (the proxy confines writes only).
   */
  readonly impersonate?: string | undefined;
  /**
   * ansible-operator's `--inject-owner-ref`: stamp what a run creates, replaces or server-side
   * applies as the owner's (an ownerReference, or the primary-resource annotations; see ownership.ts).
   */
  readonly injectOwnerRef: boolean;
  /** The entry's `markUnsafe`; the proxy does not use it (it concerns the run's variables). */
  readonly markUnsafe?: boolean | undefined;
  /**
   * A helm call: the release whose storage it may read and write, and the CR's record key
   * (records.ts). undefined for an Ansible run, whose Secrets are plain Secrets.
   */
  readonly records?: SessionRecordsContext | undefined;
  /** The reconcile's logger (controller, namespace, name, reconcileID). */
  readonly log: Logger;
}

/** A session's credentials to the proxy and what it did through them. */
export interface SessionAccess {
  /** The session's bearer token: 32 random bytes, base64url. Secret: never log it. */
  readonly token: string;
  /**
   * Kubeconfig YAML (helm's KUBECONFIG, Ansible's `K8S_AUTH_KUBECONFIG`): server `https://127.0.0.1:<port>` with the proxy's
   * certificate as its CA, the token, the CR's namespace as the context's namespace; no other
   * credential. Write it 0600.
   */
  readonly kubeconfig: string;
  /**
   * A directory for client-go's discovery and HTTP caches (KUBECACHEDIR), one per proxy: they are
   * keyed by the server's address, which is this proxy's port, so they are worth keeping only for
   * its lifetime; removed when it stops.
   */
  readonly cacheDir: string;
  /**
   * Objects the session created, updated or deleted (not the CR itself, not subresource writes, not
   * dry runs, not reviews), one entry per object with its last action, in first-write order.
   */
  objects(): SessionObject[];
  /** Resources (and namespaces) the session asked to read or watch. */
  reads(): SessionRead[];
  /**
   * The requests the proxy refused (confinement, release records), in order; the client got the
   * same message as a 403. For the CR's condition and events even when the client ignored the error.
   */
  refusals(): string[];
  /** Ends the session: its token is refused (401) from now on and its open watches are cut. Idempotent. */
  close(): void;
}

export interface ApiProxy {
  /** Listens on 127.0.0.1; rejects with a ListenError (e.g. port taken). */
  start(): Promise<{ port: number }>;
  /** Opens a session; only after start() resolved (the kubeconfig names the port). */
  openSession(ctx: SessionContext): SessionAccess;
  /** Closes every session and the listener. */
  stop(): Promise<void>;
}

interface OpenSession {
  readonly ctx: SessionContext;
  readonly record: SessionRecord;
  readonly records: SessionRecords | undefined;
  readonly refusals: string[];
  /** Requests in flight, aborted when the session closes. */
  readonly inFlight: Set<AbortController>;
}

const READ_METHODS = new Set(['GET', 'HEAD']);
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function createApiProxy(opts: ApiProxyOptions): ApiProxy {
  return new LocalApiProxy(opts);
}

class LocalApiProxy implements ApiProxy {
  private readonly sessions = new TokenTable<OpenSession>();
  private readonly open = new Set<OpenSession>();
  private readonly resources: ResourceLookup;
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private port: number | undefined;
  private cacheDir: string | undefined;
  /** The API server's `/version` answer and when it was read (serverVersion). */
  private version: { readonly at: number; readonly status: number; readonly body: Buffer } | undefined;
  /** The proxy's certificate (PEM), which session kubeconfigs trust. */
  private certificate: string | undefined;

  constructor(private readonly opts: ApiProxyOptions) {
    const port = opts.port ?? DEFAULT_PROXY_PORT;
    if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new RangeError(`proxy port must be 0..65535, got ${port}`);
    this.resources = opts.resources ?? new DiscoveryResourceLookup(opts.client);
  }

  async start(): Promise<{ port: number }> {
    if (this.port !== undefined) return { port: this.port };
    const credentials = await selfSignedCertificate(['127.0.0.1', 'localhost']);
    const server = createServer({ ...credentials, minVersion: 'TLSv1.2' }, (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.opts.log.warn({ err: errorMessage(err) }, 'API proxy request failed');
        sendStatus(res, 502, `the chartpilot API proxy failed: ${errorMessage(err)}`);
      });
    });
    // Watches stay open for minutes and a write may take long: the caller's own deadline bounds them.
    server.requestTimeout = 0;
    // Sessions are few; a client opening connections without end must not take the file
    // descriptors the informers need.
    server.maxConnections = MAX_CONNECTIONS;
    // exec, attach and port-forward switch protocols (WebSocket, SPDY); not passed through (yet):
    // answered in plain words rather than with a dropped connection.
    server.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
      const body = statusBody(501, 'the chartpilot API proxy does not pass exec, attach or port-forward connections: session that step outside the role or chart, or without the proxy');
      socket.end(`HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString('utf8')}`);
    });
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    const wanted = this.opts.port ?? DEFAULT_PROXY_PORT;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => {
        reject(new ListenError('API proxy (--proxy-port)', { host: '127.0.0.1', port: wanted, text: `127.0.0.1:${wanted}` }, { cause: err }));
      });
      server.listen({ host: '127.0.0.1', port: wanted }, () => {
        server.removeAllListeners('error');
        resolve();
      });
    });
    this.server = server;
    this.certificate = credentials.cert;
    this.cacheDir = await makeProcessDir(tmpdir(), 'chartpilot-kubecache-');
    this.port = (server.address() as AddressInfo).port;
    this.opts.log.info({ port: this.port }, 'API proxy for helm and Ansible listening on 127.0.0.1');
    return { port: this.port };
  }

  openSession(ctx: SessionContext): SessionAccess {
    if (this.port === undefined || this.certificate === undefined || this.cacheDir === undefined) throw new Error('the API proxy is not started: call start() before openSession()');
    if (ctx.impersonate === '') throw new TypeError('impersonate must not be empty when given');
    const token = newToken();
    const session: OpenSession = { ctx, record: new SessionRecord(), records: ctx.records === undefined ? undefined : new SessionRecords(ctx.records), refusals: [], inFlight: new Set() };
    this.sessions.add(token, session);
    this.open.add(session);
    let closed = false;
    return {
      token,
      kubeconfig: runKubeconfig({ port: this.port, certificate: this.certificate, token, namespace: ctx.owner.namespace }),
      cacheDir: this.cacheDir,
      objects: () => session.record.objects(),
      reads: () => session.record.reads(),
      refusals: () => [...session.refusals],
      close: () => {
        if (closed) return;
        closed = true;
        this.sessions.delete(token);
        this.open.delete(session);
        for (const c of session.inFlight) c.abort();
      },
    };
  }

  async stop(): Promise<void> {
    for (const session of this.open) for (const c of session.inFlight) c.abort();
    const server = this.server;
    this.server = undefined;
    this.port = undefined;
    this.certificate = undefined;
    if (this.cacheDir !== undefined) await rm(this.cacheDir, { recursive: true, force: true });
    this.cacheDir = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
      for (const s of this.sockets) s.destroy();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const session = this.sessionOf(req);
    if (session === undefined) {
      req.resume();
      sendStatus(res, 401, 'this proxy serves chartpilot\'s running helm calls and Ansible runs only: the token is missing, unknown, or its session has ended');
      return;
    }
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    let target;
    try {
      target = requestTarget(url);
    } catch {
      req.resume();
      sendStatus(res, 400, 'the request URL is malformed');
      return;
    }
    const controller = new AbortController();
    session.inFlight.add(controller);
    res.once('close', () => {
      session.inFlight.delete(controller);
      if (!res.writableFinished) controller.abort();
    });
    const started = performance.now();
    try {
      if (READ_METHODS.has(method)) {
        if (target.kind === 'resource') {
          session.record.readFrom({ group: target.group, version: target.version, resource: target.resource, namespace: target.namespace });
        }
        const storage = target.kind === 'resource' ? storageRead(session, target, url) : 'no';
        if (method === 'GET' && pathOnly(url) === '/version') {
          req.resume();
          await this.serverVersion(session, res, controller.signal);
        } else if (storage === 'refuse-watch' && target.kind === 'resource') {
          req.resume();
          this.refuse(session, res, 'refused to watch Helm release records: helm\'s release storage never watches them', target.resource, target.namespace, target.name);
        } else if (storage === 'judge') await this.storageRead(session, req, res, url, controller.signal);
        else await this.passRead(session, req, res, method as HttpVerb, url, controller.signal);
      } else if (WRITE_METHODS.has(method)) {
        if (target.kind !== 'resource') {
          req.resume();
          sendStatus(res, 403, `refused ${method} ${pathOnly(url)}: only API resources may be written through chartpilot's API proxy`);
        } else {
          await this.write(session, req, res, method as HttpVerb, url, target, controller.signal);
        }
      } else {
        req.resume();
        sendStatus(res, 405, `method ${method} is not supported by the chartpilot API proxy`);
      }
    } finally {
      session.ctx.log.debug({ method, path: pathOnly(url), status: res.statusCode, ms: Math.round(performance.now() - started) }, 'API proxy request');
    }
  }

  private sessionOf(req: IncomingMessage): OpenSession | undefined {
    const auth = req.headers.authorization;
    if (auth === undefined) return undefined;
    const m = /^Bearer\s+(\S+)\s*$/iu.exec(auth);
    return m?.[1] === undefined ? undefined : this.sessions.get(m[1]);
  }

  /**
   * `GET /version`, which every helm call asks up to three times: the API server's answer, kept
   * for VERSION_TTL_MS (it changes only when the server is upgraded, and is the same for every
   * identity), so most calls are answered here without a request upstream.
   */
  private async serverVersion(session: OpenSession, res: ServerResponse, signal: AbortSignal): Promise<void> {
    let cached = this.version;
    if (cached === undefined || performance.now() - cached.at > VERSION_TTL_MS) {
      const upstream = await this.forward(session, res, { method: 'GET', pathAndQuery: '/version', headers: { accept: 'application/json' }, signal });
      if (upstream === undefined) return;
      const body = await readAll(upstream.body);
      if (body === undefined) {
        res.destroy();
        return;
      }
      cached = { at: performance.now(), status: upstream.status, body };
      if (upstream.status === 200) this.version = cached;
    }
    res.writeHead(cached.status, { 'content-type': 'application/json', 'content-length': String(cached.body.length) });
    res.end(cached.body);
  }

  /** Answers 403 with `message`, kept for the session's refusals(). */
  private refuse(session: OpenSession, res: ServerResponse, message: string, resource: string, namespace: string | undefined, name: string | undefined): void {
    session.ctx.log.info({ resource, namespace, name }, message);
    // Bounded: a client looping over refused requests must not grow the operator's memory.
    if (session.refusals.length < MAX_REFUSALS_KEPT) session.refusals.push(message);
    sendStatus(res, 403, message);
  }

  /**
   * A read of helm's release storage: read whole (as JSON), passed on only when every record in it
   * is proved this CR's (records.ts); otherwise refused.
   */
  private async storageRead(session: OpenSession, req: IncomingMessage, res: ServerResponse, url: string, signal: AbortSignal): Promise<void> {
    req.resume();
    const headers: Record<string, string> = { ...clientHeaders(req, false), accept: 'application/json' };
    const upstream = await this.forward(session, res, { method: 'GET', pathAndQuery: url, headers, signal });
    if (upstream === undefined) return;
    const answer = await readAll(upstream.body);
    if (answer === undefined) {
      res.destroy();
      return;
    }
    if (upstream.status >= 200 && upstream.status < 300 && session.records !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const items = isPlainMap(parsed) && getOwn(parsed, 'kind') === 'SecretList' ? getOwn(parsed, 'items') : [parsed];
      const refusal = Array.isArray(items) ? session.records.judgeRead(items) : 'refused to serve Helm release records: the API server\'s answer is not a list of Secrets';
      if (refusal !== undefined) {
        this.refuse(session, res, refusal, 'secrets', session.records.ctx.namespace, undefined);
        return;
      }
    }
    const out = responseHeaders(upstream.headers);
    out['content-length'] = String(answer.length);
    res.writeHead(upstream.status, out);
    res.end(answer);
  }

  /** A read: passed through as it streams (watches included). */
  private async passRead(session: OpenSession, req: IncomingMessage, res: ServerResponse, method: HttpVerb, url: string, signal: AbortSignal): Promise<void> {
    req.resume();
    const upstream = await this.forward(session, res, { method, pathAndQuery: url, headers: clientHeaders(req, true), signal });
    if (upstream === undefined) return;
    res.writeHead(upstream.status, responseHeaders(upstream.headers));
    res.flushHeaders();
    try {
      await pipeline(upstream.body, res);
    } catch {
      // The client left, the session closed, or the server cut the stream: nothing more to send.
      res.destroy();
    }
  }

  private async write(session: OpenSession, req: IncomingMessage, res: ServerResponse, method: HttpVerb, url: string, target: ResourceRequest, signal: AbortSignal): Promise<void> {
    const { ctx } = session;
    const verb = writeVerb(method, target) as WriteVerb;
    const raw = await readBody(req, MAX_WRITE_BODY_BYTES);
    if (raw === undefined) {
      sendStatus(res, 413, `the request body is larger than ${MAX_WRITE_BODY_BYTES} bytes`);
      return;
    }
    let info: ResourceInfo | undefined;
    try {
      info = await this.resources.find(target.group, target.version, target.resource);
    } catch (err) {
      sendStatus(res, 503, `cannot tell where ${target.resource} objects live: API discovery failed (${errorMessage(err)}); the session may retry`);
      return;
    }
    const hasBody = raw.length > 0 && method !== 'DELETE';
    // undefined with a body: one the proxy does not parse whole (protobuf, which kubectl sends for
    // built-in kinds). Its URL decides where it lands, its name and namespace are read for the
    // decision (protobuf-meta.ts), and it is stamped right after it is written.
    let format = hasBody ? bodyFormat(req.headers['content-type']) : undefined;
    let body: unknown;
    if (format !== undefined) {
      try {
        body = parseBody(raw, format);
      } catch (err) {
        sendStatus(res, 400, err instanceof BodyError ? err.message : 'the request body cannot be read');
        return;
      }
    } else if (hasBody && session.records !== undefined && target.group === '' && target.resource === 'secrets') {
      // helm's release storage writes Secrets as protobuf: read whole, checked and sent on as JSON.
      body = decodeProtobufSecret(raw);
      if (body !== undefined) format = 'json';
    }
    const meta = isPlainMap(body) ? getOwn(body, 'metadata') : undefined;
    const opaque = hasBody && format === undefined ? protobufMeta(raw) : undefined;
    const decision = decideWrite(ctx.confinement, {
      verb,
      target,
      info,
      bodyNamespace: isPlainMap(meta) ? stringOrUndefined(getOwn(meta, 'namespace')) : opaque?.namespace,
      bodyName: isPlainMap(meta) ? stringOrUndefined(getOwn(meta, 'name')) : opaque?.name,
    });
    if (!decision.allowed || info === undefined) {
      const message = decision.allowed ? `refused to ${verb} ${target.resource}: unknown resource` : decision.message;
      this.refuse(session, res, message, target.resource, target.namespace, target.name);
      return;
    }
    let stampRecord = false;
    if (session.records !== undefined && target.group === '' && target.resource === 'secrets' && target.subresource === undefined) {
      const name = target.name ?? (isPlainMap(meta) ? stringOrUndefined(getOwn(meta, 'name')) : opaque?.name);
      if (verb === 'deletecollection' || session.records.concerns(name, body) || (hasBody && format === undefined && isRecordName(name))) {
        const rule = hasBody && format === undefined && verb !== 'delete'
          ? { allowed: false as const, message: `refused to ${verb} Helm release record ${name ?? ''}: its body is not JSON, so what it holds cannot be checked` }
          : await session.records.decideWrite(verb, name, body);
        if (!rule.allowed) {
          this.refuse(session, res, rule.message, target.resource, target.namespace, name);
          return;
        }
        stampRecord = rule.stamp && isPlainMap(body);
      }
    }
    if (stampRecord && session.records !== undefined) session.records.stamp(body as PlainMap);
    const stamp =
      ctx.injectOwnerRef && (verb === 'create' || verb === 'update' || format === 'apply') && target.subresource === undefined && info.persisted
        ? placementOf(ctx.owner, decision.scope, target.namespace)
        : undefined;
    if (stamp !== undefined && isPlainMap(body) && !isOwnerItself(ctx.owner, body, target.group, target.namespace)) {
      stampOwnership(body, ctx.owner, stamp);
    }
    // The answer is read (recorded, maybe stamped): JSON, uncompressed.
    const headers: Record<string, string> = { ...clientHeaders(req, false), accept: 'application/json' };
    let sent: Buffer | undefined = raw.length > 0 ? raw : undefined;
    if (format !== undefined) {
      // What was checked and stamped is exactly what the server gets.
      sent = Buffer.from(JSON.stringify(body), 'utf8');
      headers['content-type'] = sentContentType(format);
    }
    const upstream = await this.forward(session, res, { method, pathAndQuery: url, headers, body: sent, signal });
    if (upstream === undefined) return;
    let answer = await readAll(upstream.body);
    if (answer === undefined) {
      res.destroy();
      return;
    }
    const written = answer;
    let status = upstream.status;
    const ok = status >= 200 && status < 300 && !target.dryRun;
    if (ok && stamp !== undefined && hasBody && format === undefined) {
      // The object is written (and recorded below) either way; a failed stamp is the client's answer.
      const stamped = await this.stampWritten(session, url, verb, target, answer, stamp, signal);
      answer = stamped.answer;
      if (stamped.status < 200 || stamped.status > 299) {
        status = stamped.status;
        ctx.log.warn({ verb, resource: target.resource, namespace: target.namespace, status }, 'a written object could not be stamped as the custom resource\'s');
      }
    }
    if (ok && target.subresource === undefined && info.persisted) {
      for (const o of writtenObjects(verb, upstream.status, target, info, written)) {
        if (!isOwnerRef(ctx.owner, o)) session.record.wrote(o);
      }
    }
    const out = responseHeaders(upstream.headers);
    out['content-length'] = String(answer.length);
    out['content-type'] = 'application/json';
    res.writeHead(status, out);
    res.end(answer);
  }

  /**
   * Stamps an object written from a body the proxy could not read: a JSON merge patch of its
   * labels, annotations and ownerReferences, guarded by the resourceVersion just written (a
   * change in between fails it rather than being overwritten). The answer is the patched object,
   * or the failure the client then sees.
   */
  private async stampWritten(session: OpenSession, url: string, verb: WriteVerb, target: ResourceRequest, answer: Buffer, placement: ReturnType<typeof placementOf>, signal: AbortSignal): Promise<{ status: number; answer: Buffer }> {
    let written: unknown;
    try {
      written = JSON.parse(answer.toString('utf8'));
    } catch {
      return { status: 502, answer: statusBody(502, 'the API server\'s answer to a write is not JSON, so the object could not be stamped as the custom resource\'s') };
    }
    const meta = isPlainMap(written) ? getOwn(written, 'metadata') : undefined;
    if (!isPlainMap(written) || !isPlainMap(meta) || isOwnerItself(session.ctx.owner, written, target.group, target.namespace)) return { status: 200, answer };
    const name = stringOrUndefined(getOwn(meta, 'name'));
    if (name === undefined) return { status: 200, answer };
    const stamped = clonePlain(written) as PlainMap;
    stampOwnership(stamped, session.ctx.owner, placement);
    const after = getOwn(stamped, 'metadata') as PlainMap;
    const patch = {
      metadata: {
        resourceVersion: getOwn(meta, 'resourceVersion'),
        labels: getOwn(after, 'labels'),
        ...(placement === 'owned' ? { ownerReferences: getOwn(after, 'ownerReferences') } : { annotations: getOwn(after, 'annotations') }),
      },
    };
    const path = verb === 'create' ? `${pathOnly(url)}/${encodeURIComponent(name)}` : pathOnly(url);
    const upstream = await this.opts.client
      .forward({
        method: 'PATCH',
        pathAndQuery: path,
        headers: { 'content-type': 'application/merge-patch+json', accept: 'application/json' },
        body: Buffer.from(JSON.stringify(patch), 'utf8'),
        impersonateUser: session.ctx.impersonate,
        signal,
      })
      .catch((err: unknown) => ({ status: 502, headers: {}, body: undefined, error: err }));
    const patched = upstream.body === undefined ? undefined : await readAll(upstream.body);
    if (patched === undefined) return { status: 502, answer: statusBody(502, 'the API server did not answer the patch marking the object as the custom resource\'s') };
    return { status: upstream.status, answer: patched };
  }

  /** Sends the request as the session; undefined (and a 502 sent) when the API server did not answer. */
  private async forward(session: OpenSession, res: ServerResponse, fr: Omit<Parameters<KubeClient['forward']>[0], 'impersonateUser'>) {
    try {
      return await this.opts.client.forward({ ...fr, impersonateUser: session.ctx.impersonate });
    } catch (err) {
      if (fr.signal?.aborted === true) {
        res.destroy();
        return undefined;
      }
      sendStatus(res, 502, `the API server did not answer: ${errorMessage(err)}`);
      return undefined;
    }
  }
}

/** A response body in full; undefined when the stream broke. */
async function readAll(body: AsyncIterable<unknown>): Promise<Buffer | undefined> {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } catch {
    return undefined;
  }
}

/** The whole request body, or undefined when it exceeds `limit`. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * How a helm call's read of Secrets is served: its release storage (a record GET, a LIST asking
 * for helm's records) is judged; a watch of it refused; every other read passed through.
 */
function storageRead(session: OpenSession, target: ResourceRequest, url: string): 'judge' | 'refuse-watch' | 'no' {
  if (session.records === undefined || target.group !== '' || target.resource !== 'secrets' || target.subresource !== undefined) return 'no';
  const selector = new URL(url, 'http://proxy.invalid').searchParams.get('labelSelector');
  const storage = target.name === undefined ? isStorageQuery(selector) : isRecordName(target.name);
  if (!storage) return 'no';
  return target.watch ? 'refuse-watch' : 'judge';
}
