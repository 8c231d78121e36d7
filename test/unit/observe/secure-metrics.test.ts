import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect as connectHttp2 } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls, createServer as createTlsServer, type ConnectionOptions } from 'node:tls';
import { after, describe, it } from 'node:test';
import type { AccessReviewResult, Reviewer, TokenReviewResult } from '../../../src/kube/reviews.js';
import { CertificateError, loadCertificateFiles, selfSignedCertificate, watchCertificateFiles } from '../../../src/observe/certificates.js';
import type { Credentials } from '../../../src/observe/http-server.js';
import { OperatorMetrics } from '../../../src/observe/metrics.js';
import { ScrapeAuthorizer } from '../../../src/observe/scrape-auth.js';
import { startServers, type MetricsSecurity, type Servers } from '../../../src/observe/servers.js';
import { waitFor } from '../../integration/wait.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';

const local = { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' };

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly fingerprint: string;
}

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, rejectUnauthorized: false, agent: false }, (res) => {
      const fingerprint = (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, fingerprint });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a TLS connection and reports what was negotiated, or the error. */
function handshake(port: number, options: ConnectionOptions): Promise<{ version: string | null; alpn: string | false | null } | Error> {
  return new Promise((resolve) => {
    const socket = connectTls({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      resolve({ version: socket.getProtocol(), alpn: socket.alpnProtocol });
      socket.destroy();
    });
    socket.on('error', (err: Error) => {
      resolve(err);
    });
  });
}

function fingerprintOf(c: Credentials): string {
  return new X509Certificate(c.cert).fingerprint256;
}

async function serve(security: MetricsSecurity): Promise<{ servers: Servers; port: number; lines: () => Record<string, unknown>[] }> {
  const captured = capturingLogger('info');
  const metrics = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
  const servers = await startServers({ metrics, metricsAddress: local, metricsSecurity: security, healthAddress: undefined, ready: () => true, log: captured.log });
  const address = captured.lines.find((l) => l.msg === 'metrics server listening')?.address;
  return { servers, port: Number(typeof address === 'string' ? address.split(':').at(-1) : NaN), lines: () => captured.lines };
}

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'chartpilot-certs-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Writes the pair the way a careful writer (and kubelet) does: complete files renamed into place. */
function install(dir: string, c: Credentials): void {
  writeFileSync(join(dir, '.tls.key.tmp'), c.key);
  writeFileSync(join(dir, '.tls.crt.tmp'), c.cert);
  renameSync(join(dir, '.tls.key.tmp'), join(dir, 'tls.key'));
  renameSync(join(dir, '.tls.crt.tmp'), join(dir, 'tls.crt'));
}

describe('metrics over HTTPS (--metrics-secure)', () => {
  it('serves /metrics with a self-signed certificate for the pod and loopback names', async () => {
    const { servers, port, lines } = await serve({ certificateFiles: undefined, http2: false, auth: undefined });
    try {
      const answer = await get(port, '/metrics');
      assert.equal(answer.status, 200);
      assert.match(answer.body, /helm_operator_build_info/);
      assert.equal(lines().find((l) => l.msg === 'metrics server listening')?.certificate, 'self-signed');
      const cert = new X509Certificate((await selfSignedCertificate(['localhost', '127.0.0.1'])).cert);
      assert.equal(cert.checkHost('localhost'), 'localhost');
      assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
      assert.ok(cert.verify(cert.publicKey), 'signed by its own key');
      assert.equal(cert.subject, 'CN=localhost');
    } finally {
      await servers.close();
    }
  });

  it('speaks TLS 1.2 and 1.3 only, and HTTP/1.1 only unless HTTP/2 is enabled', async () => {
    // A control server accepting TLS 1.1 shows that this client can speak it, so a refusal below
    // comes from the metrics server.
    const c = await selfSignedCertificate(['localhost']);
    const control = createTlsServer({ ...c, minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' });
    await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
    const old: ConnectionOptions = { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' };
    try {
      const controlPort = (control.address() as { port: number }).port;
      assert.deepEqual(await handshake(controlPort, old), { version: 'TLSv1.1', alpn: false });
      const { servers, port } = await serve({ certificateFiles: undefined, http2: false, auth: undefined });
      try {
        assert.ok((await handshake(port, old)) instanceof Error, 'TLS 1.1 refused');
        assert.deepEqual(await handshake(port, { maxVersion: 'TLSv1.2' }), { version: 'TLSv1.2', alpn: false });
        assert.deepEqual(await handshake(port, { ALPNProtocols: ['h2', 'http/1.1'] }), { version: 'TLSv1.3', alpn: 'http/1.1' });
      } finally {
        await servers.close();
      }
    } finally {
      control.close();
    }
  });

  it('--enable-http2 offers h2 and answers over it', async () => {
    const { servers, port } = await serve({ certificateFiles: undefined, http2: true, auth: undefined });
    try {
      assert.deepEqual(await handshake(port, { ALPNProtocols: ['h2', 'http/1.1'] }), { version: 'TLSv1.3', alpn: 'h2' });
      assert.equal((await get(port, '/metrics')).status, 200, 'HTTP/1.1 clients still served');
      const session = connectHttp2(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
      try {
        const status = await new Promise<number>((resolve, reject) => {
          const stream = session.request({ ':path': '/metrics' });
          stream.on('response', (h) => {
            resolve(Number(h[':status']));
            stream.resume();
          });
          stream.on('error', reject);
        });
        assert.equal(status, 200);
      } finally {
        session.close();
      }
    } finally {
      await servers.close();
    }
  });

  it('serves a mounted certificate and picks up a renewed one without a restart; a broken renewal keeps the old', async () => {
    const dir = tempDir();
    const first = await selfSignedCertificate(['first.example']);
    const second = await selfSignedCertificate(['second.example']);
    install(dir, first);
    const { servers, port, lines } = await serve({ certificateFiles: { dir, certName: 'tls.crt', keyName: 'tls.key' }, http2: false, auth: undefined });
    try {
      assert.equal((await get(port, '/metrics')).fingerprint, fingerprintOf(first));
      install(dir, second);
      await waitFor('the renewed certificate to be served', async () => (await get(port, '/metrics')).fingerprint === fingerprintOf(second), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      assert.ok(lines().some((l) => l.msg === 'metrics TLS certificate reloaded'));

      install(dir, { cert: 'not a certificate', key: second.key });
      await waitFor(
        'the broken renewal to be reported',
        () => Promise.resolve(lines().some((l) => l.msg === 'metrics TLS certificate changed but cannot be used; still serving the previous one')),
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      assert.equal((await get(port, '/metrics')).fingerprint, fingerprintOf(second));
    } finally {
      await servers.close();
    }
  });

  it('picks up a Secret volume update, which swaps a ..data symlink and touches no file it names', async () => {
    // The kubelet's atomic writer: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/, and an
    // update renames a new ..data symlink over the old one.
    const dir = tempDir();
    const version = (name: string, c: Credentials): void => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'tls.crt'), c.cert);
      writeFileSync(join(dir, name, 'tls.key'), c.key);
      symlinkSync(name, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    const first = await selfSignedCertificate(['first.example']);
    const second = await selfSignedCertificate(['second.example']);
    version('..2026_11_23_10_00_00.1', first);
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));
    const { servers, port } = await serve({ certificateFiles: { dir, certName: 'tls.crt', keyName: 'tls.key' }, http2: false, auth: undefined });
    try {
      assert.equal((await get(port, '/metrics')).fingerprint, fingerprintOf(first));
      version('..2026_11_23_11_00_00.2', second);
      await waitFor('the updated Secret to be served', async () => (await get(port, '/metrics')).fingerprint === fingerprintOf(second), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
    } finally {
      await servers.close();
    }
  });

  it('a certificate replaced while the directory watch is still starting is picked up once it started', async () => {
    const dir = tempDir();
    const first = await selfSignedCertificate(['first.example']);
    const second = await selfSignedCertificate(['second.example']);
    writeFileSync(join(dir, 'tls.crt'), first.cert);
    writeFileSync(join(dir, 'tls.key'), first.key);
    const seen: string[] = [];
    const { log } = capturingLogger();
    const watch = watchCertificateFiles({ dir, certName: 'tls.crt', keyName: 'tls.key' }, first, (c) => seen.push(fingerprintOf(c)), log);
    try {
      // Before the watcher's first scan: that scan takes this state for the initial one.
      writeFileSync(join(dir, 'tls.crt'), second.cert);
      writeFileSync(join(dir, 'tls.key'), second.key);
      await waitFor('the replaced certificate to be taken', () => Promise.resolve(seen.includes(fingerprintOf(second))), { timeoutMs: 10_000, intervalMs: 20 });
    } finally {
      await watch.close();
    }
  });

  it('a mounted certificate that cannot be used stops the start with a message naming the file', async () => {
    const dir = tempDir();
    const files = { dir, certName: 'tls.crt', keyName: 'tls.key' };
    await assert.rejects(loadCertificateFiles(files), (err: Error) => {
      assert.ok(err instanceof CertificateError);
      assert.equal(err.message, `cannot read the metrics TLS certificate ${join(dir, 'tls.crt')}: no such file; mount it there or leave out --metrics-cert-path to use a self-signed certificate`);
      return true;
    });
    const a = await selfSignedCertificate(['a']);
    const b = await selfSignedCertificate(['b']);
    install(dir, { cert: a.cert, key: b.key });
    await assert.rejects(loadCertificateFiles(files), /^CertificateError: the metrics TLS key .*tls\.key does not fit the certificate .*tls\.crt or is not a PEM private key/);
    install(dir, { cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', key: b.key });
    await assert.rejects(loadCertificateFiles(files), /^CertificateError: the metrics TLS certificate .*tls\.crt is not a PEM certificate/);
    install(dir, a);
    assert.deepEqual(await loadCertificateFiles(files), a);

    const { log } = capturingLogger('info');
    const metrics = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    await assert.rejects(
      startServers({ metrics, metricsAddress: local, metricsSecurity: { certificateFiles: { ...files, certName: 'missing.crt' }, http2: false, auth: undefined }, healthAddress: local, ready: () => true, log }),
      CertificateError,
    );
  });

  it('--metrics-require-rbac: 401 without a token, 403 for a user without access, 200 for a reader, on any path', async () => {
    const reviewer: Reviewer = {
      reviewToken: (token): Promise<TokenReviewResult> =>
        Promise.resolve(token === 'bad' ? { authenticated: false, error: 'invalid' } : { authenticated: true, user: { username: token } }),
      reviewAccess: (user): Promise<AccessReviewResult> => Promise.resolve({ allowed: user.username === 'reader', reason: '' }),
    };
    const auth = new ScrapeAuthorizer({ reviewer, log: capturingLogger().log });
    const { servers, port } = await serve({ certificateFiles: undefined, http2: false, auth });
    try {
      const none = await get(port, '/metrics');
      assert.equal(none.status, 401);
      assert.doesNotMatch(none.body, /helm_operator_build_info/);
      assert.equal((await get(port, '/metrics', { Authorization: 'Bearer bad' })).status, 401);
      const forbidden = await get(port, '/metrics', { Authorization: 'Bearer stranger' });
      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.body, 'Forbidden: stranger may not get /metrics; bind it to the metrics-reader ClusterRole\n');
      assert.equal((await get(port, '/elsewhere', { Authorization: 'Bearer stranger' })).status, 403, 'no path is revealed to strangers');
      const ok = await get(port, '/metrics', { Authorization: 'Bearer reader' });
      assert.equal(ok.status, 200);
      assert.match(ok.body, /helm_operator_build_info/);
      assert.equal((await get(port, '/elsewhere', { Authorization: 'Bearer reader' })).status, 404);
    } finally {
      await servers.close();
    }
  });
});
