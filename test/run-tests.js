#!/usr/bin/env node
// The runner behind `npm test` (after `npm run build`): Node's own test runner over the compiled
// tests, with the integration tests' control plane started once by the global setup.
//
//   npm test                          all unit and integration tests
//   npm test -- unit                  only dist/test/unit/**
//   npm test -- integration           only dist/test/integration/**
//   npm test -- cluster helm          files whose path contains "cluster" or "helm"
//   npm test -- --test-name-pattern=GC   extra flags (--flag=value form) go to node --test
//
// Plain JS (not compiled) so it runs before anything else exists. Prints nothing after node's
// own summary: CI reads the closing `ℹ pass N` / `ℹ fail N` lines.
import { spawn } from 'node:child_process';
import { existsSync, globSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GLOBAL_SETUP = 'dist/test/integration/global-setup.js';

if (Number(process.versions.node.split('.')[0]) < 24) {
  console.error(`node ${process.version} is too old (need 24): run through npm (npm test), which puts Node 24 first on PATH`);
  process.exit(1);
}

const args = process.argv.slice(2);
const nodeFlags = args.filter((a) => a.startsWith('-'));
const filters = args.filter((a) => !a.startsWith('-'));

// Compiled tests whose source still exists: tsc never deletes outputs, so a renamed or deleted
// test would otherwise keep running from a stale dist/.
const files = globSync('dist/test/{unit,integration}/**/*.test.js', { cwd: root })
  .map((f) => f.split('\\').join('/'))
  .filter((f) => existsSync(resolve(root, f.replace(/^dist\//, '').replace(/\.js$/, '.ts'))))
  .sort();

/** unit / integration select a suite; anything else is a path substring (source or dist path). */
function matches(file, filter) {
  if (filter === 'unit' || filter === 'integration') return file.startsWith(`dist/test/${filter}/`);
  const needle = filter.replace(/^\.\//, '').replace(/^dist\//, '').replace(/\.ts$/, '.js');
  return file.includes(needle);
}

// Files that use the OLM tools or the OCI registry (they import olm-tools.ts or registries.ts)
// start last: on a cold machine .ci/run builds those while the rest of the suite runs, and these
// files wait for that build (holding one of the concurrent slots while they wait).
const waitsForBackgroundBuild = (f) => /from '\.\/(olm-tools|registries)\.js'/u.test(readFileSync(resolve(root, f.replace(/^dist\//, '').replace(/\.js$/, '.ts')), 'utf8'));
const selected = (filters.length === 0 ? files : files.filter((f) => filters.some((flt) => matches(f, flt))))
  .map((f) => ({ f, last: waitsForBackgroundBuild(f) }))
  .sort((a, b) => Number(a.last) - Number(b.last))
  .map(({ f }) => f);
if (selected.length === 0) {
  console.error(filters.length === 0
    ? 'no compiled tests under dist/test/{unit,integration}: run `npm run build` first'
    : `no test file matches ${filters.join(', ')} (known: ${files.join(', ')})`);
  process.exit(1);
}

// node --test sorts the paths it is given (they are glob patterns), so the order above would be
// lost: each file runs through a generated one-line wrapper whose name sorts where it belongs,
// dist/test/run-order/<runner pid>/NNN-<name>.test.js importing it (a directory per run, so two
// runs in one checkout do not overwrite each other's). The test files themselves are unchanged
// (their imports, import.meta.url and reported locations are their own).
// The unit test files all run in ONE process, first, through one generated file that imports
// them one after another: a process per file cost ~0.25 CPU-s of Node start-up and module loading
// each (`npm test -- unit`, 155 files: 40 CPU-s, against 19 in one process). Their tests are
// reported as before; a file that fails to load becomes a failing test named after it.
// Integration files keep a process each (they start operators, hold ports and env). With any
// --test-isolation flag, or a single file selected, the files run as they are.
const ORDER_ROOT = 'dist/test/run-order';
const ORDER_DIR = `${ORDER_ROOT}/${String(process.pid)}`;
removeStaleOrderDirs();
let toRun = selected;
if (selected.length > 1 && !nodeFlags.some((a) => a.startsWith('--test-isolation'))) {
  mkdirSync(resolve(root, ORDER_DIR), { recursive: true });
  const unitFiles = selected.filter((f) => f.startsWith('dist/test/unit/'));
  const entries = [
    ...(unitFiles.length === 0 ? [] : [{ name: 'unit-tests', source: unitsFileSource(unitFiles) }]),
    ...selected.filter((f) => !f.startsWith('dist/test/unit/')).map((f) => ({
      name: f.split('/').at(-1).replace(/\.test\.js$/, ''),
      source: `import '../../${f.slice('dist/test/'.length)}';\n`,
    })),
  ];
  const width = String(entries.length).length;
  toRun = entries.map(({ name, source }, i) => {
    const wrapper = `${ORDER_DIR}/${String(i).padStart(width, '0')}-${name}.test.js`;
    writeFileSync(resolve(root, wrapper), `// Generated by test/run-tests.js for this run (see there).\n${source}`);
    return wrapper;
  });
}

/** Removes the wrapper directories of runs that are gone (a run removes its own when it ends). */
function removeStaleOrderDirs() {
  let dirs = [];
  try {
    dirs = readdirSync(resolve(root, ORDER_ROOT));
  } catch {
    return;
  }
  for (const d of dirs) {
    if (/^\d+$/.test(d) && Number(d) !== process.pid && isAlive(Number(d))) continue;
    rmSync(resolve(root, ORDER_ROOT, d), { recursive: true, force: true });
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** A test file importing each of the unit test files `files` in order. */
function unitsFileSource(files) {
  return [
    "import { test } from 'node:test';",
    `for (const file of ${JSON.stringify(files.map((f) => `../../${f.slice('dist/test/'.length)}`))}) {`,
    '  try {',
    '    await import(file);',
    '  } catch (err) {',
    '    test(`${file} loads`, () => { throw err; });',
    '  }',
    '}',
    '',
  ].join('\n');
}

const nodeArgs = [
  '--test',
  '--test-reporter=spec',
  // Integration tests mostly wait on the cluster, so a few files at a time share it well.
  '--test-concurrency=3',
  // Per test: a hung test fails after 5 minutes instead of stalling CI.
  '--test-timeout=300000',
];
// The control plane costs a few seconds: start it only when integration tests run.
if (selected.some((f) => f.startsWith('dist/test/integration/'))) nodeArgs.push(`--test-global-setup=${GLOBAL_SETUP}`);
nodeArgs.push(...nodeFlags, ...toRun);

const child = spawn(process.execPath, nodeArgs, { cwd: root, stdio: 'inherit' });

// Per-file watchdog. A test file whose tests are done but which keeps a handle open (a timer, a
// socket, a child process) never exits, and node then waits for it forever: --test-timeout does
// not cover that, and --test-force-exit cancels the last test of files written with top-level
// `await test(...)`. So a file process alive longer than FILE_TIMEOUT_MS gets SIGTERM; node
// reports that file as failed and the run goes on to its normal summary.
const FILE_TIMEOUT_MS = Number(process.env.CHARTPILOT_TEST_FILE_TIMEOUT_MS) || 20 * 60_000;
const seen = new Map(); // pid -> { file, since, killed }
const watchdog = setInterval(() => {
  for (const { pid, file } of testFileProcesses(child.pid)) {
    const entry = seen.get(pid) ?? { file, since: Date.now(), killed: false };
    seen.set(pid, entry);
    if (entry.killed || Date.now() - entry.since < FILE_TIMEOUT_MS) continue;
    entry.killed = true;
    console.error(`run-tests: ${file} still running after ${Math.round(FILE_TIMEOUT_MS / 1000)} s (a hung test, or a timer/socket/child process left open): stopping it`);
    kill(pid, 'SIGTERM');
    setTimeout(() => { kill(pid, 'SIGKILL'); }, 10_000).unref();
  }
}, 5_000);
watchdog.unref();

/** The test-file processes node --test spawned (Linux /proc; elsewhere the watchdog is off). */
function testFileProcesses(parentPid) {
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parentPid) continue;
      const file = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).at(-1);
      if (file?.endsWith('.test.js')) found.push({ pid: Number(entry), file });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

function kill(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  // A terminal's Ctrl-C reaches the child too (same process group); forwarding matters when only
  // this process is signalled (CI timeouts, process managers).
  process.on(sig, () => { child.kill(sig); });
}
child.on('exit', (code, signal) => {
  rmSync(resolve(root, ORDER_DIR), { recursive: true, force: true });
  process.exit(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1));
});
