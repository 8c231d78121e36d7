/**
 * The post-renderer served from inside the operator. Helm runs the plugin once per install or
 * upgrade; as a Node script that costs a Node start-up and a YAML library load per call (0.08 CPU
 * seconds, as much as the rest of a helm 4 install), so instead the plugin is curl posting the
 * manifest to this server on a private unix socket, and the operator's warm code transforms it.
 *
 * Each helm call registers its spec under a random id that travels as the plugin's argument (the
 * URL), so nothing about the CR is on a command line and a refusal reaches the caller directly.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { PostRenderSpec } from '../types.js';
import { injectMetadata, PostRenderRefusal } from './inject.js';
import { errorMessage } from '../../lib/errors.js';
import type { RenderRefusal } from './spec.js';

/** Far above any manifest helm stores (a release Secret holds at most 1 MiB compressed). */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
/** Host part of the URL; meaningless over a unix socket but required by HTTP. */
const URL_PREFIX = 'http://chartpilot/render/';

export interface RegisteredRender {
  /** The plugin's argument: where curl posts the manifest. */
  readonly url: string;
  /** Why the render was refused, once helm has run the plugin and it was. */
  refusal(): RenderRefusal | undefined;
  /** Forgets the registration (always call it, success or not). */
  done(): void;
}

export interface RenderServer {
  readonly socketPath: string;
  register(spec: PostRenderSpec): RegisteredRender;
  close(): Promise<void>;
}

interface Job {
  readonly spec: PostRenderSpec;
  refusal: RenderRefusal | undefined;
}

export async function startRenderServer(socketPath: string): Promise<RenderServer> {
  const jobs = new Map<string, Job>();

  const reply = (res: ServerResponse, status: number, body: string): void => {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const id = req.method === 'POST' && req.url?.startsWith('/render/') ? req.url.slice('/render/'.length) : undefined;
    const job = id === undefined ? undefined : jobs.get(id);
    if (job === undefined) {
      req.resume();
      reply(res, 404, 'no such render\n');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_MANIFEST_BYTES) {
        reply(res, 413, `manifest larger than ${String(MAX_MANIFEST_BYTES)} bytes\n`);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (res.writableEnded) return;
      try {
        reply(res, 200, injectMetadata(Buffer.concat(chunks).toString('utf8'), job.spec));
      } catch (err) {
        const message = errorMessage(err);
        if (err instanceof PostRenderRefusal) job.refusal = { message, unknownKinds: err.unknownKinds };
        reply(res, 422, `${message}\n`);
      }
    });
    req.on('error', () => undefined); // the plugin died (helm killed): nothing to answer
  };

  const server = createServer(handle);
  // Keep-alive is pointless (one request per curl) and would delay close().
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref(); // never what keeps the process alive

  return {
    socketPath,
    register(spec) {
      const key = randomUUID();
      const job: Job = { spec, refusal: undefined };
      jobs.set(key, job);
      return {
        url: URL_PREFIX + key,
        refusal: () => job.refusal,
        done: () => { jobs.delete(key); },
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => { resolve(); });
      }),
  };
}
