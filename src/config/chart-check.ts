/**
 * Load-time check that a watches.yaml `chart` is something Helm can install: a chart directory
 * or a packaged chart (gzip tar), with a Chart.yaml that names it. Catching this at start-up
 * turns a reconcile-time failure on every CR into one clear message.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { isMap, isScalar, parseDocument } from 'yaml';
import { tarFiles } from './tar.js';
import { scalarText } from './yaml-nodes.js';
import { errorMessage } from '../lib/errors.js';

const gunzipAsync = promisify(gunzip);

// Helm's own limit on a packaged chart's decompressed size (loader.MaxDecompressedChartSize).
const MAX_CHART_BYTES = 100 * 1024 * 1024;

/** Returns what is wrong with the chart at `absPath`, or undefined when Helm could load it. */
export async function checkChart(absPath: string): Promise<string | undefined> {
  let info;
  try {
    info = await stat(absPath);
  } catch (err) {
    return describeFsError(err, 'not found');
  }
  if (info.isDirectory()) return checkChartDir(absPath);
  if (info.isFile()) {
    if (info.size > MAX_CHART_BYTES) return 'the packaged chart is larger than the 100 MiB Helm accepts';
    return checkChartArchive(absPath);
  }
  return 'is neither a chart directory nor a packaged chart (.tgz)';
}

async function checkChartDir(dir: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, 'Chart.yaml'), 'utf8');
  } catch (err) {
    return describeFsError(
      err,
      'the directory has no Chart.yaml; a chart directory holds Chart.yaml, values.yaml and templates/',
    );
  }
  return chartYamlProblem(text, 'Chart.yaml');
}

async function checkChartArchive(file: string): Promise<string | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    return describeFsError(err, 'not found');
  }
  const read = await readChartArchive(bytes);
  return read.ok ? undefined : read.problem;
}

export type ChartArchive = { ok: true; name: string; version: string } | { ok: false; problem: string };

/**
 * What Helm would make of a packaged chart's bytes: its Chart.yaml's name and version, or what is
 * wrong (not gzip, truncated, no Chart.yaml, a library chart). Charts from registries are checked
 * with it before anything is installed from them.
 */
export async function readChartArchive(bytes: Uint8Array): Promise<ChartArchive> {
  const problem = (p: string): ChartArchive => ({ ok: false, problem: p });
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    return problem('is a file but not a packaged chart (not gzip-compressed); point chart at a chart directory or at the .tgz made by `helm package`');
  }
  let tar: Buffer;
  try {
    tar = await gunzipAsync(bytes, { maxOutputLength: MAX_CHART_BYTES });
  } catch (err) {
    return problem(`the packaged chart cannot be decompressed (${errorMessage(err)})`);
  }
  try {
    for (const f of tarFiles(tar)) {
      const parts = f.name.replace(/^\.\//u, '').split('/');
      // Helm expects every file under one top-level directory named after the chart.
      if (parts.length === 2 && parts[1] === 'Chart.yaml') {
        const text = new TextDecoder().decode(f.data);
        const bad = chartYamlProblem(text, f.name);
        if (bad !== undefined) return problem(bad);
        const doc = parseDocument(text, { version: '1.1' }).toJS() as { name?: unknown; version?: unknown };
        return { ok: true, name: String(doc.name), version: String(doc.version) };
      }
    }
  } catch (err) {
    return problem(`the packaged chart is not a valid tar archive (${errorMessage(err)})`);
  }
  return problem('the packaged chart has no <chart>/Chart.yaml inside; package charts with `helm package <dir>`');
}

/** The rules Helm's chart loader applies to Chart.yaml that matter before installing. */
export function chartYamlProblem(text: string, where: string): string | undefined {
  const doc = parseDocument(text, { version: '1.1' });
  const first = doc.errors[0];
  if (first !== undefined) return `${where} is not valid YAML (${first.message.split('\n')[0] ?? ''})`;
  const root = doc.contents;
  if (!isMap(root)) return `${where} must be a map with apiVersion, name and version`;
  const missing: string[] = [];
  const field = (key: string): string | undefined => {
    const node = root.get(key, true);
    if (!isScalar(node) || node.value === null) return undefined;
    const v = scalarText(node);
    return v.trim() === '' ? undefined : v;
  };
  for (const key of ['apiVersion', 'name', 'version']) if (field(key) === undefined) missing.push(key);
  if (missing.length > 0) return `${where} has no ${missing.join(', ')}; Helm requires apiVersion, name and version`;
  if (field('type') === 'library') return `${where} declares a library chart (type: library), which Helm cannot install`;
  return undefined;
}

function describeFsError(err: unknown, notFound: string): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return notFound;
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  return `cannot be read (${errorMessage(err)})`;
}
