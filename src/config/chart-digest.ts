/**
 * A digest of a chart's content. It is part of every release fingerprint, so editing any file of
 * the chart (templates, values.yaml, Chart.yaml, subcharts) upgrades every CR of that kind, and an
 * unchanged chart costs nothing.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    const full = join(dir, e.name);
    // stat follows symlinks, so a linked subchart counts like a copied one.
    const s = e.isSymbolicLink() ? await stat(full) : undefined;
    if (e.isDirectory() || s?.isDirectory() === true) out.push(...(await filesUnder(full)));
    else if (e.isFile() || s?.isFile() === true) out.push(full);
  }
  return out;
}

export async function chartDigest(chartPath: string): Promise<string> {
  const hash = createHash('sha256');
  const s = await stat(chartPath);
  if (s.isFile()) {
    hash.update(await readFile(chartPath));
    return hash.digest('hex');
  }
  const files = (await filesUnder(chartPath)).map((f) => ({ full: f, rel: relative(chartPath, f).split(sep).join('/') }));
  files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  for (const f of files) {
    hash.update(f.rel).update('\u0000');
    hash.update(await readFile(f.full)).update('\u0000');
  }
  return hash.digest('hex');
}
