/**
 * The local API server proxy Ansible runs talk to (ansible-operator's `--proxy-port` server), with
 * what ansible-operator's lacks: each run has its own token (useless once the run ends), acts as
 * its ServiceAccount when it has one, and may write only where its CR's confinement allows.
 *
 * HTTPS, with a certificate made at start that each run's kubeconfig trusts: client-go (kubectl,
 * and helm, which kubernetes.core.helm runs) sends no credentials to a plain-HTTP server, so a
 * token over HTTP would reach the proxy from the python client only.
 *
 *   Ansible (kubernetes.core, kubectl, helm) ──https://127.0.0.1:<port>, Bearer <run token>──▶ proxy
 *     reads (GET/HEAD, watches): passed through as they stream, as the run's identity
 *     writes: resource and scope from discovery ─▶ confinement ─▶ owner stamp ─▶ API server
 *             ─▶ the answer is recorded (what the run created/updated/deleted) and passed back
 *
 * Bodies are never logged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { BodyError, bodyFormat, parseBody, sentContentType } from './body.js';
import { clientHeaders, responseHeaders } from './headers.js';
import { runKubeconfig } from './kubeconfig.js';
import { isOwnerItself, placementOf, stampOwnership, type RunOwner } from './ownership.js';
import { protobufMeta } from './protobuf-meta.js';
import { requestTarget, type ResourceRequest } from './request-info.js';
import { DiscoveryResourceLookup, type ResourceInfo, type ResourceLookup } from './resources.js';
import { RunRecord, TokenTable, newToken, type RunObject, type RunRead } from './runs.js';
import { sendStatus, statusBody } from './status.js';
import { decideWrite, writeVerb, type WriteVerb } from './write-policy.js';
import { isOwnerRef, writtenObjects } from './written.js';
import type { HttpVerb, KubeClient } from '../../kube/rest.js';
import { errorMessage } from '../../lib/errors.js';
import { clonePlain, getOwn, isPlainMap, type PlainMap } from '../../lib/json.js';
import { selfSignedCertificate } from '../../observe/certificates.js';
import { ListenError } from '../../observe/http-server.js';
import type { Confinement } from '../../reconcile/confinement.js';

/** ansible-operator's default `--proxy-port`. */
export const DEFAULT_PROXY_PORT = 8888;
/** Larger write bodies are refused (the API server's own limit is about 3 MiB per object). */
export const MAX_WRITE_BODY_BYTES = 8 * 1024 * 1024;
const MAX_REFUSALS_KEPT = 20;
const MAX_CONNECTIONS = 512;

export interface RunProxyOptions {
  /** The operator's client: its credentials and connection pool carry every forwarded request. */
  readonly client: KubeClient;
  readonly log: Logger;
  /** Port on 127.0.0.1; default 8888 (ansible-operator's); 0 = any free port. */
  readonly port?: number | undefined;
  /** Resource scopes; default: the API server's discovery through `client` (tests substitute a table). */
  readonly resources?: ResourceLookup | undefined;
}

/** One Ansible run, as the proxy needs to know it. */
export interface RunContext {
  /** The custom resource the run reconciles (its uid is what ownerReferences name). */
  readonly owner: RunOwner;
  /** Where the run may write: the CR's namespace, and beyond it only as its watches entry allows. */
  readonly confinement: Confinement;
  /**
   * Every request of the run is made as this user (`system:serviceaccount:<ns>:<name>`); the API
   * server adds the ServiceAccount's groups. undefined: the operator's own identity — reads then
   * have the operator's rights (the proxy confines writes only).
   */
  readonly impersonate?: string | undefined;
  /**
   * ansible-operator's `--inject-owner-ref`: stamp what the run creates, replaces or server-side
   * applies as the owner's (an ownerReference, or the primary-resource annotations; see ownership.ts).
   */
  readonly injectOwnerRef: boolean;
  /** The entry's `markUnsafe`; the proxy does not use it (it concerns the run's variables). */
  readonly markUnsafe?: boolean | undefined;
  /** The reconcile's logger (controller, namespace, name, reconcileID). */
  readonly log: Logger;
}

/** A run's credentials to the proxy and what it did through them. */
export interface RunAccess {
  /** The run's bearer token: 32 random bytes, base64url. Secret: never log it. */
  readonly token: string;
  /**
   * Kubeconfig YAML for `K8S_AUTH_KUBECONFIG`: server `https://127.0.0.1:<port>` with the proxy's
   * certificate as its CA, the token, the CR's namespace as the context's namespace; no other
   * credential. Write it 0600.
   */
  readonly kubeconfig: string;
  /**
   * Objects the run created, updated or deleted (not the CR itself, not subresource writes, not
   * dry runs, not reviews), one entry per object with its last action, in first-write order.
   */
  objects(): RunObject[];
  /** Resources (and namespaces) the run asked to read or watch. */
  reads(): RunRead[];
  /**
   * The writes the proxy refused (confinement), in order; the role's task got the same message
   * as a 403. For the CR's condition and events even when the role ignored the error.
   */
  refusals(): string[];
  /** Ends the run's access: its token is refused (401) from now on and its open watches are cut. Idempotent. */
  close(): void;
}

export interface RunProxy {
  /** Listens on 127.0.0.1; rejects with a ListenError (e.g. port taken). */
  start(): Promise<{ port: number }>;
  /** Registers a run; only after start() resolved (the kubeconfig names the port). */
  openRun(ctx: RunContext): RunAccess;
  /** Closes every run and the listener. */
  stop(): Promise<void>;
}

interface OpenRun {
  readonly ctx: RunContext;
  readonly record: RunRecord;
  readonly refusals: string[];
  /** Requests in flight, aborted when the run closes. */
  readonly inFlight: Set<AbortController>;
}

const READ_METHODS = new Set(['GET', 'HEAD']);
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function createRunProxy(opts: RunProxyOptions): RunProxy {
  return new LocalRunProxy(opts);
}

class LocalRunProxy implements RunProxy {
  private readonly runs = new TokenTable<OpenRun>();
  private readonly open = new Set<OpenRun>();
  private readonly resources: ResourceLookup;
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private port: number | undefined;
  /** The proxy's certificate (PEM), which run kubeconfigs trust. */
  private certificate: string | undefined;

  constructor(private readonly opts: RunProxyOptions) {
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
    // Watches stay open for minutes and a write may take long: the run's own deadline bounds them.
    server.requestTimeout = 0;
    // Runs are few; a role opening connections without end must not take the file descriptors
    // helm and the informers need.
    server.maxConnections = MAX_CONNECTIONS;
    // exec, attach and port-forward switch protocols (WebSocket, SPDY); not passed through (yet):
    // answered in plain words rather than with a dropped connection.
    server.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
      const body = statusBody(501, 'the chartpilot API proxy does not pass exec, attach or port-forward connections: run that step outside the role, or without the proxy');
      socket.end(`HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString('utf8')}`);
    });
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    const wanted = this.opts.port ?? DEFAULT_PROXY_PORT;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => {
        reject(new ListenError('Ansible API proxy (--proxy-port)', { host: '127.0.0.1', port: wanted, text: `127.0.0.1:${wanted}` }, { cause: err }));
      });
      server.listen({ host: '127.0.0.1', port: wanted }, () => {
        server.removeAllListeners('error');
        resolve();
      });
    });
    this.server = server;
    this.certificate = credentials.cert;
    this.port = (server.address() as AddressInfo).port;
    this.opts.log.info({ port: this.port }, 'Ansible API proxy listening on 127.0.0.1');
    return { port: this.port };
  }

  openRun(ctx: RunContext): RunAccess {
    if (this.port === undefined || this.certificate === undefined) throw new Error('the Ansible API proxy is not started: call start() before openRun()');
    if (ctx.impersonate === '') throw new TypeError('impersonate must not be empty when given');
    const token = newToken();
    const run: OpenRun = { ctx, record: new RunRecord(), refusals: [], inFlight: new Set() };
    this.runs.add(token, run);
    this.open.add(run);
    let closed = false;
    return {
      token,
      kubeconfig: runKubeconfig({ port: this.port, certificate: this.certificate, token, namespace: ctx.owner.namespace }),
      objects: () => run.record.objects(),
      reads: () => run.record.reads(),
      refusals: () => [...run.refusals],
      close: () => {
        if (closed) return;
        closed = true;
        this.runs.delete(token);
        this.open.delete(run);
        for (const c of run.inFlight) c.abort();
      },
    };
  }

  async stop(): Promise<void> {
    for (const run of this.open) for (const c of run.inFlight) c.abort();
    const server = this.server;
    this.server = undefined;
    this.port = undefined;
    this.certificate = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
      for (const s of this.sockets) s.destroy();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const run = this.runOf(req);
    if (run === undefined) {
      req.resume();
      sendStatus(res, 401, 'this proxy serves running Ansible reconciles only: the token is missing, unknown, or its run has ended');
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
    run.inFlight.add(controller);
    res.once('close', () => {
      run.inFlight.delete(controller);
      if (!res.writableFinished) controller.abort();
    });
    const started = performance.now();
    try {
      if (READ_METHODS.has(method)) {
        if (target.kind === 'resource') {
          run.record.readFrom({ group: target.group, version: target.version, resource: target.resource, namespace: target.namespace });
        }
        await this.passRead(run, req, res, method as HttpVerb, url, controller.signal);
      } else if (WRITE_METHODS.has(method)) {
        if (target.kind !== 'resource') {
          req.resume();
          sendStatus(res, 403, `refused ${method} ${pathOnly(url)}: runs may write API resources only`);
        } else {
          await this.write(run, req, res, method as HttpVerb, url, target, controller.signal);
        }
      } else {
        req.resume();
        sendStatus(res, 405, `method ${method} is not supported by the chartpilot API proxy`);
      }
    } finally {
      run.ctx.log.debug({ method, path: pathOnly(url), status: res.statusCode, ms: Math.round(performance.now() - started) }, 'API proxy request');
    }
  }

  private runOf(req: IncomingMessage): OpenRun | undefined {
    const auth = req.headers.authorization;
    if (auth === undefined) return undefined;
    const m = /^Bearer\s+(\S+)\s*$/iu.exec(auth);
    return m?.[1] === undefined ? undefined : this.runs.get(m[1]);
  }

  /** A read: passed through as it streams (watches included). */
  private async passRead(run: OpenRun, req: IncomingMessage, res: ServerResponse, method: HttpVerb, url: string, signal: AbortSignal): Promise<void> {
    req.resume();
    const upstream = await this.forward(run, res, { method, pathAndQuery: url, headers: clientHeaders(req, true), signal });
    if (upstream === undefined) return;
    res.writeHead(upstream.status, responseHeaders(upstream.headers));
    res.flushHeaders();
    try {
      await pipeline(upstream.body, res);
    } catch {
      // The client left, the run closed, or the server cut the stream: nothing more to send.
      res.destroy();
    }
  }

  private async write(run: OpenRun, req: IncomingMessage, res: ServerResponse, method: HttpVerb, url: string, target: ResourceRequest, signal: AbortSignal): Promise<void> {
    const { ctx } = run;
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
      sendStatus(res, 503, `cannot tell where ${target.resource} objects live: API discovery failed (${errorMessage(err)}); the run may retry`);
      return;
    }
    const hasBody = raw.length > 0 && method !== 'DELETE';
    // undefined with a body: one the proxy does not parse whole (protobuf, which kubectl sends for
    // built-in kinds). Its URL decides where it lands, its name and namespace are read for the
    // decision (protobuf-meta.ts), and it is stamped right after it is written.
    const format = hasBody ? bodyFormat(req.headers['content-type']) : undefined;
    let body: unknown;
    if (format !== undefined) {
      try {
        body = parseBody(raw, format);
      } catch (err) {
        sendStatus(res, 400, err instanceof BodyError ? err.message : 'the request body cannot be read');
        return;
      }
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
      ctx.log.info({ verb, resource: target.resource, namespace: target.namespace, name: target.name }, message);
      // Bounded: a role looping over refused writes must not grow the operator's memory.
      if (run.refusals.length < MAX_REFUSALS_KEPT) run.refusals.push(message);
      sendStatus(res, 403, message);
      return;
    }
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
    const upstream = await this.forward(run, res, { method, pathAndQuery: url, headers, body: sent, signal });
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
      const stamped = await this.stampWritten(run, url, verb, target, answer, stamp, signal);
      answer = stamped.answer;
      if (stamped.status < 200 || stamped.status > 299) {
        status = stamped.status;
        ctx.log.warn({ verb, resource: target.resource, namespace: target.namespace, status }, 'a written object could not be stamped as the custom resource\'s');
      }
    }
    if (ok && target.subresource === undefined && info.persisted) {
      for (const o of writtenObjects(verb, upstream.status, target, info, written)) {
        if (!isOwnerRef(ctx.owner, o)) run.record.wrote(o);
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
  private async stampWritten(run: OpenRun, url: string, verb: WriteVerb, target: ResourceRequest, answer: Buffer, placement: ReturnType<typeof placementOf>, signal: AbortSignal): Promise<{ status: number; answer: Buffer }> {
    let written: unknown;
    try {
      written = JSON.parse(answer.toString('utf8'));
    } catch {
      return { status: 502, answer: statusBody(502, 'the API server\'s answer to a write is not JSON, so the object could not be stamped as the custom resource\'s') };
    }
    const meta = isPlainMap(written) ? getOwn(written, 'metadata') : undefined;
    if (!isPlainMap(written) || !isPlainMap(meta) || isOwnerItself(run.ctx.owner, written, target.group, target.namespace)) return { status: 200, answer };
    const name = stringOrUndefined(getOwn(meta, 'name'));
    if (name === undefined) return { status: 200, answer };
    const stamped = clonePlain(written) as PlainMap;
    stampOwnership(stamped, run.ctx.owner, placement);
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
        impersonateUser: run.ctx.impersonate,
        signal,
      })
      .catch((err: unknown) => ({ status: 502, headers: {}, body: undefined, error: err }));
    const patched = upstream.body === undefined ? undefined : await readAll(upstream.body);
    if (patched === undefined) return { status: 502, answer: statusBody(502, 'the API server did not answer the patch marking the object as the custom resource\'s') };
    return { status: upstream.status, answer: patched };
  }

  /** Sends the request as the run; undefined (and a 502 sent) when the API server did not answer. */
  private async forward(run: OpenRun, res: ServerResponse, fr: Omit<Parameters<KubeClient['forward']>[0], 'impersonateUser'>) {
    try {
      return await this.opts.client.forward({ ...fr, impersonateUser: run.ctx.impersonate });
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
