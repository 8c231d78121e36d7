/**
 * devcluster/yaml-readers, the Go program that reads manifests with helm v4.1.4's own YAML
 * packages: provisioned (built once into the cache outside the repository, like every Go tool of
 * the project) and run on a batch of cases, its JSON read back with every number's exact text.
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';

import { repoRoot } from '../../../../devcluster/paths.js';
import { provision } from '../../../../devcluster/provision.js';

export interface Case {
  readonly name: string;
  readonly yaml: string;
}

/** One reader's verdict: its objects, or its error (then no objects). */
export interface Reading {
  readonly objects: readonly unknown[];
  readonly error: string | undefined;
}

/** One of kio.ParseAll's documents: how many of the objects it makes, and the file annotation GetMeta reads. */
export interface KyamlDocument {
  readonly objects: number;
  readonly file: string | undefined;
}

export interface KyamlReading extends Reading {
  readonly documents: readonly KyamlDocument[];
}

export interface Readings {
  /** cli-runtime's builder as helm's kube client sets it up (go-yaml v2 through sigs.k8s.io/yaml). */
  readonly v2: Reading;
  /**
   * kyaml's part, without go-yaml v3's typing (helm never applies it): kio.ParseAll's documents,
   * each as kyaml writes it and the same builder reads it, and the file annotation GetMeta reads.
   */
  readonly kyaml: KyamlReading;
  /** splitAndDeannotate, SortManifests and the builder: what helm applies after a post-renderer. */
  readonly helm: Reading;
  /** kio.StringAll(kio.ParseAll(yaml)): the text helm hands a post-renderer for such a file. */
  readonly reemitted: string | undefined;
  /** What helm stores, were `yaml` a post-renderer's output: the release manifest, then each hook's. */
  readonly stored: readonly string[];
}

/** A JSON number as the Go program wrote it: its text, so that no digit is lost in JavaScript. */
export class GoNumber {
  constructor(readonly source: string) {}
}

/**
 * The binary, built when the cache lacks it. Go is required: without it the build fails and so
 * does the test that needs it — never a skip, so CI cannot pass without running the comparison.
 */
export async function yamlReadersBinary(): Promise<string> {
  const lines: string[] = [];
  const bin = await provision({ components: ['yaml-readers'], log: (line) => { lines.push(line); } })
    .catch((err: unknown) => {
      throw new Error(`building devcluster/yaml-readers failed (Go >= 1.26 and the Go module proxy are needed):\n${lines.join('\n')}`, { cause: err });
    });
  // The bin dir's link follows whichever checkout provisioned last: hold on to this build.
  return realpathSync(join(bin, 'yaml-readers'));
}

export async function readWithHelm(binary: string, cases: readonly Case[]): Promise<Map<string, Readings>> {
  const r = await execa(binary, [], { input: JSON.stringify(cases), reject: false, maxBuffer: 256 * 1024 * 1024 });
  if (r.exitCode !== 0) throw new Error(`${binary} exited with ${String(r.exitCode)}: ${r.stderr}`);
  const parsed: unknown = JSON.parse(r.stdout, keepNumberText);
  if (!Array.isArray(parsed) || parsed.length !== cases.length) throw new Error(`${binary} did not answer one result per case:\n${r.stdout.slice(0, 2000)}`);
  const out = new Map<string, Readings>();
  for (const item of parsed as unknown[]) {
    if (!isRecord(item) || typeof item['name'] !== 'string') throw new Error(`a result without a name: ${JSON.stringify(item)}`);
    const reemitted = item['reemitted'];
    const stored = item['stored'] ?? [];
    if (!Array.isArray(stored) || !stored.every((m) => typeof m === 'string')) throw new Error(`stored is not a list of texts: ${JSON.stringify(item)}`);
    out.set(item['name'], {
      v2: reading(item['v2']),
      kyaml: kyamlReading(item['kyaml']),
      helm: reading(item['helm']),
      reemitted: typeof reemitted === 'string' ? reemitted : undefined,
      stored,
    });
  }
  return out;
}

/** The modules the binary links, as `path → version`, from Go's own build information. */
export async function linkedModules(binary: string): Promise<Map<string, string>> {
  const r = await execa(binary, ['-versions']);
  return new Map(r.stdout.split('\n').filter(Boolean).map((l) => {
    const [path = '', version = ''] = l.split(' ');
    return [path, version];
  }));
}

/**
 * helm's go.mod requirements (`path → version`) for `version`, from the Go module cache (where
 * building the program put it), as helm-worker's TestSameDependencyVersionsAsHelm reads them.
 */
export async function helmRequirements(version: string): Promise<Map<string, string>> {
  const r = await execa('go', ['mod', 'download', '-json', `helm.sh/helm/v4@${version}`], {
    cwd: join(repoRoot(), 'devcluster', 'yaml-readers'),
    env: { GOTOOLCHAIN: 'local' },
  });
  const info: unknown = JSON.parse(r.stdout);
  if (!isRecord(info) || typeof info['GoMod'] !== 'string') throw new Error(`go mod download gave no go.mod: ${r.stdout}`);
  const gomod = await readFile(info['GoMod'], 'utf8');
  const out = new Map<string, string>();
  let inRequire = false;
  for (const raw of gomod.split('\n')) {
    const line = raw.trim();
    if (line === 'require (') inRequire = true;
    else if (line === ')') inRequire = false;
    else if (inRequire && line !== '' && !line.startsWith('//')) {
      const [path, v] = line.split(/\s+/);
      if (path !== undefined && v !== undefined) out.set(path, v);
    }
  }
  return out;
}

function reading(v: unknown): Reading {
  if (!isRecord(v) || !Array.isArray(v['objects'])) throw new Error(`not a reading: ${JSON.stringify(v)}`);
  const error = v['error'];
  return { objects: v['objects'] as unknown[], error: typeof error === 'string' ? error : undefined };
}

function kyamlReading(v: unknown): KyamlReading {
  const r = reading(v);
  const documents = isRecord(v) ? v['documents'] ?? [] : [];
  if (!Array.isArray(documents)) throw new Error(`documents is not a list: ${JSON.stringify(v)}`);
  return {
    ...r,
    documents: documents.map((d: unknown) => {
      if (!isRecord(d) || !(d['objects'] instanceof GoNumber) || !(d['file'] === undefined || typeof d['file'] === 'string')) throw new Error(`not a kyaml document: ${JSON.stringify(d)}`);
      return { objects: Number(d['objects'].source), file: d['file'] };
    }),
  };
}

/** JSON.parse's reviver: every number becomes its source text (Node 24 passes it as context). */
function keepNumberText(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== 'number') return value;
  if (context?.source === undefined) throw new Error('JSON.parse gave no source text for a number (Node >= 24 needed)');
  return new GoNumber(context.source);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
