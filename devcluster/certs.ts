// A throwaway PKI for one control plane, made with the openssl CLI (present on every Debian
// machine) rather than a crypto dependency. EC P-256 keys for the leaves: generating them takes
// milliseconds and a TLS handshake signs with them cheaply. The control plane's CA is RSA-2048:
// the API server verifies the CA's signature on the client certificate on every request (x509
// authenticator, no cache), and an RSA verify costs a third of a P-256 one (measured 93 vs
// 259 µs here): ECDSA verification was ~9% of the API server's CPU in a test run's profile.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';

export interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  /** Service-account token signing key (private) and its public half for verification. */
  saKey: string;
  saPub: string;
}

// Our own config file, so the machine's openssl.cnf defaults (e.g. CA:TRUE on every
// `req -x509`) cannot leak into the leaf certificates.
const OPENSSL_CNF = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = DNS:localhost,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

async function openssl(cwd: string, args: string[]): Promise<void> {
  const r = await execa('openssl', args, { cwd, reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

const ecKey = (out: string): string[] => ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out];
const rsaKey = (out: string): string[] => ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', out];

async function leaf(dir: string, name: string, subject: string, extensions: 'server' | 'client'): Promise<void> {
  await openssl(dir, ecKey(`${name}.key`));
  await openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', subject, '-config', 'openssl.cnf', '-out', `${name}.csr`]);
  // A random serial instead of -CAcreateserial lets the leaves be signed in parallel.
  await openssl(dir, [
    'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key',
    '-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', '3650',
    '-extfile', 'openssl.cnf', '-extensions', extensions, '-out', `${name}.crt`,
  ]);
}

/** Writes a CA, the API server's serving cert, an admin client cert and the SA key pair into dir. */
export async function makePki(dir: string): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'openssl.cnf'), OPENSSL_CNF);
  await openssl(dir, rsaKey('ca.key'));
  await openssl(dir, ['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=chartpilot-local-ca', '-days', '3650', '-config', 'openssl.cnf', '-extensions', 'ca', '-out', 'ca.crt']);
  await Promise.all([
    leaf(dir, 'apiserver', '/CN=kube-apiserver', 'server'),
    // O=system:masters: the group RBAC binds to cluster-admin, so this one identity serves
    // kubectl, helm, the controllers and the tests.
    leaf(dir, 'admin', '/O=system:masters/CN=chartpilot-admin', 'client'),
    (async () => {
      await openssl(dir, ecKey('sa.key'));
      await openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
    })(),
  ]);
  const p = (f: string): string => join(dir, f);
  return {
    caCert: p('ca.crt'), caKey: p('ca.key'),
    serverCert: p('apiserver.crt'), serverKey: p('apiserver.key'),
    adminCert: p('admin.crt'), adminKey: p('admin.key'),
    saKey: p('sa.key'), saPub: p('sa.pub'),
  };
}

export interface ServerPki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
}

/**
 * A CA of its own and a serving certificate for localhost/127.0.0.1 signed by it, for a server
 * next to the control plane (the OCI registry, the Helm chart repository): clients must be given
 * the CA, as they would be for a private registry.
 */
export async function makeServerPki(dir: string, name: string): Promise<ServerPki> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'openssl.cnf'), OPENSSL_CNF);
  await openssl(dir, ecKey('ca.key'));
  await openssl(dir, ['req', '-x509', '-new', '-key', 'ca.key', '-subj', `/CN=chartpilot-${name}-ca`, '-days', '3650', '-config', 'openssl.cnf', '-extensions', 'ca', '-out', 'ca.crt']);
  await leaf(dir, 'server', `/CN=${name}`, 'server');
  const p = (f: string): string => join(dir, f);
  return { caCert: p('ca.crt'), caKey: p('ca.key'), serverCert: p('server.crt'), serverKey: p('server.key') };
}
