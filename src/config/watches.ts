/**
 * Loading watches.yaml: the operator-sdk format (a YAML list mapping group/version/kind to a
 * chart) plus chartpilot's optional keys. Everything wrong with the file is reported at once,
 * one line per problem, so a user fixes the file in one pass instead of one restart per mistake.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isSeq, LineCounter, parseDocument, type YAMLError } from 'yaml';
import { gvkKey, type GroupVersionKind, type WatchEntry } from './types.js';
import { checkChart } from './chart-check.js';
import { diskPathKind, locatePlaybook, locateRole, type AnsibleBase, type Located, type PathKind } from './ansible-paths.js';
import type { AnsibleRunnable, AnsibleSource } from './types.js';
import { at, gvkText, readEntry, type EntryResult } from './watch-entry.js';
import { deref, describeNode, lineOf, type YamlContext } from './yaml-nodes.js';

export { applyOverrides, overrideValuesToTree } from './overrides.js';
export { deepMerge } from '../lib/deep-merge.js';

export type LoadResult = { ok: true; entries: WatchEntry[] } | { ok: false; problems: string[] };

/** Returns what is wrong with the chart at an absolute path, or undefined when it is loadable. */
export type ChartChecker = (absPath: string) => Promise<string | undefined>;

export interface ParseOptions {
  /** How problems name the file; default "watches.yaml". */
  readonly fileName?: string;
  /** Where Ansible roles and playbooks are looked for: the working directory (default process.cwd()) and the disk (default the real one). */
  readonly ansible?: { readonly cwd?: string; readonly kindOf?: PathKind };
}

type Env = Readonly<Record<string, string | undefined>>;

/** `Nginx.v1alpha1.demo.example.com` (`Nginx.v1alpha1` when the group is empty), for logs and problems. */
export function describeEntry(e: GroupVersionKind): string {
  return gvkText(e.kind, e.version, e.group);
}

/** Reads and validates the watches file; `env` supplies `$VAR` values for overrideValues. */
export async function loadWatches(file: string, env: Env): Promise<LoadResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES' || code === 'EPERM'
            ? 'permission denied'
            : err instanceof Error
              ? err.message
              : String(err);
    return {
      ok: false,
      problems: [`cannot read watches file ${file}: ${why}; pass the path of your watches.yaml with --watches-file`],
    };
  }
  return parseWatches(text, dirname(resolve(file)), env, checkChart, { fileName: file });
}

/**
 * Validates watches.yaml text. Relative chart paths resolve against `baseDir` (the directory of
 * the watches file); `checkChart` is the only side effect, so tests can run without a disk.
 */
export async function parseWatches(
  text: string,
  baseDir: string,
  env: Env,
  checkChart: ChartChecker,
  options: ParseOptions = {},
): Promise<LoadResult> {
  const fileName = options.fileName ?? 'watches.yaml';
  const lines = new LineCounter();
  // YAML 1.1, as go-yaml (behind operator-sdk's sigs.k8s.io/yaml) reads it: `yes`/`no`/`on`/`off`
  // are booleans and `<<` merge keys work, so files written for operator-sdk mean the same here.
  const doc = parseDocument(text, { version: '1.1', lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    return { ok: false, problems: doc.errors.map((e) => yamlProblem(fileName, e, lines)) };
  }
  const ctx: YamlContext = { doc, lines };
  const root = deref(ctx, doc.contents);
  if (root === null) {
    return {
      ok: false,
      problems: [
        `${fileName} is empty; it must be a YAML list with one entry per custom resource kind, e.g. "- {group: demo.example.com, version: v1alpha1, kind: Nginx, chart: helm-charts/nginx}"`,
      ],
    };
  }
  if (!isSeq(root)) {
    return {
      ok: false,
      problems: [
        `${fileName}: the top level is ${describeNode(root)}; it must be a list of entries, each starting with "- " (if this is a single entry, put "- " before its first key)`,
      ],
    };
  }
  if (root.items.length === 0) {
    return {
      ok: false,
      problems: [`${fileName} has no entries; add one per custom resource kind, each with group, version, kind and chart`],
    };
  }

  const results: EntryResult[] = root.items.map((item, i) =>
    readEntry({ ctx, node: deref(ctx, item), line: lineOf(ctx, item), number: i + 1, fileName, env }),
  );
  const later: string[][] = results.map(() => []);

  // Duplicate group/version/kind: two controllers would fight over the same objects.
  const firstByGvk = new Map<string, number>();
  results.forEach((r, i) => {
    if (r.gvk === undefined) return;
    const key = gvkKey(r.gvk);
    const first = firstByGvk.get(key);
    if (first === undefined) {
      firstByGvk.set(key, i);
      return;
    }
    const other = results[first];
    later[i]?.push(
      `${at(r.label, r.line)}: duplicates entry ${first + 1}${other?.line === undefined ? '' : ` (line ${other.line})`}; each group/version/kind may appear only once — remove one or change its version or kind`,
    );
  });

  const chartPaths = results.map((r) => (r.chart === undefined ? undefined : resolve(baseDir, r.chart)));
  const chartProblems = await Promise.all(
    chartPaths.map((p) => (p === undefined ? Promise.resolve(undefined) : checkChart(p))),
  );
  chartProblems.forEach((problem, i) => {
    const r = results[i];
    if (problem === undefined || r === undefined || r.chart === undefined) return;
    // Name the absolute path looked at: a relative chart is resolved against the watches file's
    // directory, which is not always the directory the operator was started in.
    const resolved = isAbsolute(r.chart)
      ? ''
      : ` (looked for ${chartPaths[i] ?? ''}; relative paths start at the watches file's directory)`;
    later[i]?.push(`${at(r.label, r.chartLine)}: chart "${r.chart}"${resolved}: ${problem}`);
  });

  // Ansible roles and playbooks (the entry's and its finalizer's), found on disk.
  const ansibleBase: AnsibleBase = { baseDir, cwd: options.ansible?.cwd ?? process.cwd(), env };
  const kindOf = options.ansible?.kindOf ?? diskPathKind;
  const located = await Promise.all(
    results.map(async (r, i) => {
      const source = r.draft?.ansible;
      if (source === undefined) return undefined;
      const found = await locateAnsible(source, ansibleBase, kindOf, (problem) => later[i]?.push(`${at(r.label, r.line)}: ${problem}`));
      return found;
    }),
  );

  const problems = results.flatMap((r, i) => [...r.problems, ...(later[i] ?? [])]);
  if (problems.length > 0) return { ok: false, problems };

  const entries: WatchEntry[] = [];
  results.forEach((r, i) => {
    // A chart from a registry has no path until it is pulled (src/registry/).
    if (r.draft === undefined) return;
    const { chart: _chart, ...rest } = r.draft;
    if (rest.ansible !== undefined) {
      const ansible = located[i];
      if (ansible !== undefined) entries.push({ ...rest, chartPath: '', ansible });
      return;
    }
    const chartPath = rest.remote === undefined ? chartPaths[i] : '';
    if (chartPath !== undefined) entries.push({ ...rest, chartPath });
  });
  return { ok: true, entries };
}

/** `source` with its role/playbook (and its finalizer's) made absolute; undefined after reporting what is missing. */
async function locateAnsible(source: AnsibleSource, base: AnsibleBase, kindOf: PathKind, report: (problem: string) => void): Promise<AnsibleSource | undefined> {
  const find = async (r: AnsibleRunnable, what: string): Promise<AnsibleRunnable | undefined> => {
    let found: Located | undefined;
    if (r.role !== undefined) found = await locateRole(r.role, base, kindOf);
    else if (r.playbook !== undefined) found = await locatePlaybook(r.playbook, base, kindOf);
    if (found === undefined) return {};
    if (!found.ok) {
      report(`${what}${found.problem}`);
      return undefined;
    }
    return r.role !== undefined ? { role: found.path } : { playbook: found.path };
  };
  const main = await find(source, '');
  const fin = source.finalizer === undefined ? undefined : await find(source.finalizer, 'finalizer: ');
  if (main === undefined || (source.finalizer !== undefined && fin === undefined)) return undefined;
  const { role: _r, playbook: _p, ...settings } = source;
  const finalizer = source.finalizer === undefined ? undefined : (() => {
    const { role: _fr, playbook: _fp, ...rest } = source.finalizer;
    return { ...rest, ...fin };
  })();
  return { ...settings, ...main, finalizer };
}

function yamlProblem(fileName: string, e: YAMLError, lines: LineCounter): string {
  const pos = lines.linePos(e.pos[0]);
  const message = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/u, '');
  if (e.code === 'MULTIPLE_DOCS') {
    return `${fileName}:${pos.line}:${pos.col}: the file holds more than one YAML document ("---"); put all entries in one list`;
  }
  return `${fileName}:${pos.line}:${pos.col}: invalid YAML: ${message}`;
}
