/**
 * The metrics server's certificate: a mounted one (`--metrics-cert-path`, e.g. a cert-manager
 * Secret), re-read when its files change so a renewal needs no restart; or, without one, a
 * self-signed certificate made at start, as controller-runtime does.
 */
import { webcrypto, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { watch } from 'chokidar';
import type { Logger } from 'pino';
import { errorMessage } from '../lib/errors.js';
import type { Credentials } from './http-server.js';

/** A certificate that cannot be used; the message names the file and the fix. */
export class CertificateError extends Error {
  override readonly name = 'CertificateError';
}

/** Where a mounted certificate lives: `dir/certName` and `dir/keyName` (kubebuilder's layout). */
export interface CertificateFiles {
  readonly dir: string;
  readonly certName: string;
  readonly keyName: string;
}

/** Reads and checks a mounted certificate and key: both readable PEM, and the key the certificate's. */
export async function loadCertificateFiles(files: CertificateFiles): Promise<Credentials> {
  const certPath = join(files.dir, files.certName);
  const keyPath = join(files.dir, files.keyName);
  const read = async (path: string, what: string): Promise<string> => {
    try {
      return await readFile(path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : errorMessage(err);
      throw new CertificateError(`cannot read the metrics TLS ${what} ${path}: ${why}; mount it there or leave out --metrics-cert-path to use a self-signed certificate`);
    }
  };
  const credentials = { cert: await read(certPath, 'certificate'), key: await read(keyPath, 'key') };
  try {
    new X509Certificate(credentials.cert);
  } catch (err) {
    throw new CertificateError(`the metrics TLS certificate ${certPath} is not a PEM certificate (${errorMessage(err)})`);
  }
  try {
    createSecureContext(credentials);
  } catch (err) {
    throw new CertificateError(`the metrics TLS key ${keyPath} does not fit the certificate ${certPath} or is not a PEM private key (${errorMessage(err)})`);
  }
  return credentials;
}

/** A fresh ECDSA P-256 key and a certificate for it, signed by itself, valid for a year. */
export async function selfSignedCertificate(hosts: readonly string[] = defaultHosts()): Promise<Credentials> {
  // Loaded only here: most runs never make a certificate (x509.ts says why through that module).
  const x509 = await import('./x509.js');
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const now = Date.now();
  const names = hosts.map((h) => (/^[\d.]+$|:/u.test(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h }));
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/u, '1'),
      name: `CN=${hosts[0] ?? 'chartpilot'}`,
      // A little in the past: a scraper whose clock lags must not see a certificate from the future.
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 365 * 24 * 3600_000),
      keys,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.SubjectAlternativeNameExtension(names),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      ],
    },
    webcrypto,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.replace(/.{1,64}/gu, '$&\n')}-----END PRIVATE KEY-----\n`;
  return { cert: cert.toString('pem'), key };
}

/** Names a scraper may use: the pod (its hostname) and loopback. Scrapers of self-signed certs skip verification anyway. */
function defaultHosts(): string[] {
  return [...new Set([hostname(), 'localhost', '127.0.0.1', '::1'])];
}

export interface CertificateWatch {
  close(): Promise<void>;
}

/**
 * Calls `onChange` with the new credentials whenever the files change to a valid pair. The
 * directory is watched, not the files: Kubernetes updates a mounted Secret by swapping a `..data`
 * symlink, which changes no watched file. A bad intermediate state (key written, certificate not
 * yet) is logged and the previous certificate stays in use.
 */
export function watchCertificateFiles(files: CertificateFiles, current: Credentials, onChange: (c: Credentials) => void, log: Logger): CertificateWatch {
  let served = current;
  let timer: NodeJS.Timeout | undefined;
  let reading = Promise.resolve();
  const reload = async (): Promise<void> => {
    try {
      const next = await loadCertificateFiles(files);
      if (next.cert === served.cert && next.key === served.key) return;
      served = next;
      onChange(next);
      log.info({ dir: files.dir }, 'metrics TLS certificate reloaded');
    } catch (err) {
      log.warn({ dir: files.dir, err: errorMessage(err) }, 'metrics TLS certificate changed but cannot be used; still serving the previous one');
    }
  };
  const watcher = watch(files.dir, { ignoreInitial: true, depth: 1, followSymlinks: false });
  watcher.on('all', () => {
    // Writers touch the pair in several steps: act once they have settled.
    clearTimeout(timer);
    timer = setTimeout(() => {
      reading = reading.then(reload);
    }, 200);
  });
  // A change while chokidar still scans the directory is taken for the initial state and gives no
  // event (ignoreInitial): look once more when the scan is done.
  watcher.on('ready', () => {
    reading = reading.then(reload);
  });
  watcher.on('error', (err: unknown) => {
    log.warn({ dir: files.dir, err: errorMessage(err) }, 'cannot watch the metrics TLS certificate directory; a renewed certificate needs a restart');
  });
  return {
    close: async () => {
      clearTimeout(timer);
      await watcher.close();
      await reading;
    },
  };
}
