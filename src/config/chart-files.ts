/**
 * Read-only access to a chart's files, whether it is a directory or a packaged `.tgz`, so the
 * generators (values.yaml, values.schema.json, templates) and the operator's start-up check of
 * templates (template-functions.ts) read both the same way.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { tarFiles } from './tar.js';
import { errorMessage } from '../lib/errors.js';

const gunzipAsync = promisify(gunzip);

/** Helm's own limit on a packaged chart's decompressed size. */
const MAX_CHART_BYTES = 100 * 1024 * 1024;

export interface ChartFiles {
  /** Where the chart came from, for messages. */
  readonly source: string;
  /** Every file, keyed by its path inside the chart with '/' separators (e.g. `templates/svc.yaml`). */
  readonly files: ReadonlyMap<string, Uint8Array>;
}

export class ChartReadError extends Error {
  override readonly name = 'ChartReadError';
}

/** Reads a chart directory or packaged chart into memory (charts are small; Helm does the same). */
export async function readChartFiles(path: string): Promise<ChartFiles> {
  let info;
  try {
    info = await stat(path);
  } catch (err) {
    throw new ChartReadError(`cannot read chart ${path}: ${message(err)}`, { cause: err });
  }
  if (info.isDirectory()) return { source: path, files: await readDir(path) };
  return { source: path, files: await readArchive(await readFile(path), path) };
}

/** Reads a packaged chart from bytes (also used for subcharts packaged inside a chart). */
export async function readArchive(bytes: Uint8Array, source: string): Promise<Map<string, Uint8Array>> {
  let tar: Buffer;
  try {
    tar = await gunzipAsync(bytes, { maxOutputLength: MAX_CHART_BYTES });
  } catch (err) {
    throw new ChartReadError(`cannot decompress packaged chart ${source}: ${message(err)}`, { cause: err });
  }
  const files = new Map<string, Uint8Array>();
  for (const f of tarFiles(tar)) {
    // Every file of a packaged chart sits under one top-level directory named after the chart.
    const parts = f.name.replace(/^\.\//u, '').split('/');
    if (parts.length < 2) continue;
    files.set(parts.slice(1).join('/'), f.data);
  }
  return files;
}

async function readDir(root: string): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name === '.git') continue;
        await walk(full);
      } else if (entry.isFile()) {
        files.set(relative(root, full).split(sep).join('/'), await readFile(full));
      }
    }
  };
  try {
    await walk(root);
  } catch (err) {
    throw new ChartReadError(`cannot read chart directory ${root}: ${message(err)}`, { cause: err });
  }
  return files;
}

export function fileText(chart: ChartFiles, name: string): string | undefined {
  const data = chart.files.get(name);
  return data === undefined ? undefined : new TextDecoder().decode(data);
}

function message(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'no such file or directory';
  return errorMessage(err);
}
