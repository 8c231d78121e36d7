// A classic Helm chart repository on loopback: a static HTTPS file server over a directory that
// holds `helm package` output and the index.yaml `helm repo index` writes, as any web server
// would serve them (ETag and Last-Modified, so conditional GETs answer 304), with optional basic
// auth. It runs in the calling process: stopping it is closing the server.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, normalize, resolve, sep } from 'node:path';
import { makeServerPki } from './certs.js';

export interface ChartRepoOptions {
  /** The directory served (charts and index.yaml). */
  readonly root: string;
  /** Where its certificates go. */
  readonly pkiDir: string;
  /** user → password; without it anyone may read. */
  readonly users?: Readonly<Record<string, string>>;
}

export interface ChartRepo {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  readonly caFile: string;
  /** One line per request so far: `<status> <method> <path>`. */
  requests(): string[];
  stop(): Promise<void>;
  /** Listens again on the same port (after `stop`). */
  start(): Promise<void>;
}

const TYPES: Record<string, string> = { '.yaml': 'application/x-yaml', '.tgz': 'application/gzip', '.json': 'application/json' };

function authorized(header: string | undefined, users: Readonly<Record<string, string>>): boolean {
  if (header?.startsWith('Basic ') !== true) return false;
  const [user = '', ...rest] = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':');
  const want = users[user];
  if (want === undefined) return false;
  const a = Buffer.from(rest.join(':'));
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function startChartRepo(opts: ChartRepoOptions): Promise<ChartRepo> {
  const root = resolve(opts.root);
  const pki = await makeServerPki(opts.pkiDir, 'chart-repo');
  const [cert, key] = await Promise.all([readFile(pki.serverCert), readFile(pki.serverKey)]);
  const log: string[] = [];
  const server: Server = createServer({ cert, key }, (req, res) => {
    const done = (status: number, headers: Record<string, string> = {}, body?: Buffer): void => {
      log.push(`${String(status)} ${req.method ?? ''} ${req.url ?? ''}`);
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (opts.users !== undefined && !authorized(req.headers.authorization, opts.users)) {
      done(401, { 'WWW-Authenticate': 'Basic realm="charts"' });
      return;
    }
    const path = decodeURIComponent(new URL(req.url ?? '/', 'https://x').pathname);
    const file = normalize(join(root, path));
    if (!file.startsWith(root + sep)) {
      done(404);
      return;
    }
    void (async () => {
      try {
        const s = await stat(file);
        if (!s.isFile()) {
          done(404);
          return;
        }
        const body = await readFile(file);
        const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`;
        const lastModified = s.mtime.toUTCString();
        const headers = { ETag: etag, 'Last-Modified': lastModified, 'Content-Type': TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream' };
        if (req.headers['if-none-match'] === etag) {
          done(304, headers);
          return;
        }
        done(200, { ...headers, 'Content-Length': String(body.length) }, body);
      } catch {
        done(404);
      }
    })();
  });
  let port = 0;
  const listen = (): Promise<void> =>
    new Promise((res, rej) => {
      server.once('error', rej);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', rej);
        port = (server.address() as AddressInfo).port;
        res();
      });
    });
  await listen();
  return {
    url: `https://127.0.0.1:${String(port)}`,
    caFile: pki.caCert,
    requests: () => [...log],
    stop: () =>
      new Promise((res) => {
        server.closeAllConnections();
        server.close(() => { res(); });
      }),
    start: listen,
  };
}
