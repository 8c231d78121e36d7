/**
 * `chartpilot generate catalog`: a file-based catalog (olm.package, one olm.channel per channel,
 * one olm.bundle per bundle) over bundle directories written by `generate bundle`. The olm.bundle
 * blobs hold the bundle's objects inline (olm.bundle.object), as `opm render <bundle dir>` writes
 * them, so `opm serve` can serve the catalog without bundle images; with --bundle-image each
 * bundle also names its image, for clusters that unpack bundles from images.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import { isSemver, type KubeObject } from './bundle-csv.js';
import { InputError } from './errors.js';
import { yamlStream } from './output.js';

export interface LoadedBundle {
  readonly dir: string;
  readonly packageName: string;
  readonly channels: readonly string[];
  readonly defaultChannel: string | undefined;
  readonly csv: KubeObject;
  /** Every manifest, the CSV included, in file name order. */
  readonly objects: readonly KubeObject[];
}

const ANNOTATION = 'operators.operatorframework.io.bundle.';

function objectsOfYaml(text: string, file: string): KubeObject[] {
  return parseAllDocuments(text, { version: '1.1' }).map((d) => {
    const first = d.errors[0];
    if (first !== undefined) throw new InputError([`${file} is not valid YAML (${first.message.split('\n')[0] ?? ''}): regenerate the bundle`]);
    const js: unknown = d.toJS();
    return isPlainObject(js) ? js : {};
  }).filter((o) => Object.keys(o).length > 0);
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new InputError([`cannot read ${file}: ${errorMessage(err)}; name a directory written by chartpilot generate bundle (it holds manifests/ and metadata/)`]);
  }
}

/** Reads a bundle directory (the one holding manifests/ and metadata/). */
export async function loadBundle(dir: string): Promise<LoadedBundle> {
  const annotationsFile = join(dir, 'metadata', 'annotations.yaml');
  const meta = objectsOfYaml(await readText(annotationsFile), annotationsFile)[0]?.['annotations'];
  if (!isPlainObject(meta)) throw new InputError([`${annotationsFile} has no annotations map: regenerate the bundle`]);
  const packageName = meta[`${ANNOTATION}package.v1`];
  const channels = meta[`${ANNOTATION}channels.v1`];
  if (typeof packageName !== 'string' || typeof channels !== 'string') {
    throw new InputError([`${annotationsFile} lacks ${ANNOTATION}package.v1 or channels.v1: regenerate the bundle`]);
  }
  const defaultChannel = meta[`${ANNOTATION}channel.default.v1`];
  let names: string[];
  try {
    names = (await readdir(join(dir, 'manifests'))).filter((n) => /\.ya?ml$|\.json$/u.test(n)).sort();
  } catch (err) {
    throw new InputError([`cannot read ${join(dir, 'manifests')}: ${errorMessage(err)}`]);
  }
  const objects: KubeObject[] = [];
  for (const n of names) objects.push(...objectsOfYaml(await readText(join(dir, 'manifests', n)), join(dir, 'manifests', n)));
  const csvs = objects.filter((o) => o['kind'] === 'ClusterServiceVersion');
  const csv = csvs[0];
  if (csv === undefined || csvs.length > 1) throw new InputError([`${join(dir, 'manifests')} must hold exactly one ClusterServiceVersion (it holds ${String(csvs.length)})`]);
  return {
    dir,
    packageName,
    channels: channels.split(',').map((c) => c.trim()).filter((c) => c !== ''),
    defaultChannel: typeof defaultChannel === 'string' ? defaultChannel : undefined,
    csv,
    objects,
  };
}

function field(o: unknown, ...path: string[]): unknown {
  let v = o;
  for (const p of path) v = isPlainObject(v) ? v[p] : undefined;
  return v;
}

function csvInfo(b: LoadedBundle): { name: string; version: string; replaces: string | undefined; skipRange: string | undefined } {
  const name = field(b.csv, 'metadata', 'name');
  const version = field(b.csv, 'spec', 'version');
  const replaces = field(b.csv, 'spec', 'replaces');
  const skipRange = field(b.csv, 'metadata', 'annotations', 'olm.skipRange');
  if (typeof name !== 'string' || typeof version !== 'string' || !isSemver(version)) {
    throw new InputError([`${b.dir}: the ClusterServiceVersion needs metadata.name and a semver spec.version: regenerate the bundle`]);
  }
  return { name, version, replaces: typeof replaces === 'string' ? replaces : undefined, skipRange: typeof skipRange === 'string' ? skipRange : undefined };
}

/** Semver precedence of x.y.z[-pre] (build metadata ignored). */
export function compareSemver(a: string, b: string): number {
  const parse = (v: string): { core: number[]; pre: string[] } => {
    const [main = '', pre] = v.split('+')[0]?.split(/-(.*)/su) ?? [];
    return { core: main.split('.').map(Number), pre: pre === undefined || pre === '' ? [] : pre.split('.') };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.core[i] ?? 0) - (y.core[i] ?? 0);
    if (d !== 0) return d;
  }
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    if (p === q) continue;
    const pn = /^\d+$/u.test(p);
    const qn = /^\d+$/u.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

/** The properties `opm render` gives a bundle: its package and version, the GVKs it provides, every object inline. */
export function bundleProperties(b: LoadedBundle): KubeObject[] {
  const { version } = csvInfo(b);
  const gvks: KubeObject[] = [];
  for (const crd of b.objects.filter((o) => o['kind'] === 'CustomResourceDefinition')) {
    const group = field(crd, 'spec', 'group');
    const kind = field(crd, 'spec', 'names', 'kind');
    const versions = field(crd, 'spec', 'versions');
    for (const v of Array.isArray(versions) ? versions : []) {
      if (typeof group === 'string' && typeof kind === 'string' && isPlainObject(v) && typeof v['name'] === 'string') {
        gvks.push({ type: 'olm.gvk', value: { group, kind, version: v['name'] } });
      }
    }
  }
  return [
    ...gvks,
    { type: 'olm.package', value: { packageName: b.packageName, version } },
    ...b.objects.map((o) => ({ type: 'olm.bundle.object', value: { data: Buffer.from(JSON.stringify(o)).toString('base64') } })),
  ];
}

/** As opm: the CSV's relatedImages, the bundle image, and every image its Deployments run (for mirroring). */
export function relatedImages(b: LoadedBundle, bundleImage: string): { name: string; image: string }[] {
  const out: { name: string; image: string }[] = [];
  const seen = new Set<string>();
  const add = (name: string, image: unknown): void => {
    if (typeof image !== 'string' || image === '' || seen.has(image)) return;
    seen.add(image);
    out.push({ name, image });
  };
  const declared = field(b.csv, 'spec', 'relatedImages');
  for (const r of Array.isArray(declared) ? declared : []) add(typeof field(r, 'name') === 'string' ? String(field(r, 'name')) : '', field(r, 'image'));
  add('', bundleImage);
  const deployments = field(b.csv, 'spec', 'install', 'spec', 'deployments');
  for (const d of Array.isArray(deployments) ? deployments : []) {
    for (const list of ['initContainers', 'containers']) {
      const containers = field(d, 'spec', 'template', 'spec', list);
      for (const c of Array.isArray(containers) ? containers : []) add('', field(c, 'image'));
    }
  }
  return out.sort((x, y) => (x.image < y.image ? -1 : x.image > y.image ? 1 : 0));
}

export interface CatalogOptions {
  /** Names the package when bundles disagree or to check them; default: the bundles' own. */
  readonly packageName?: string | undefined;
  readonly defaultChannel?: string | undefined;
  /** e.g. registry.example.com/webapp-operator-bundle:v{version}; "" leaves olm.bundle image empty. */
  readonly bundleImage?: string | undefined;
}

/**
 * The file-based catalog of one package over the given bundles: channels from each bundle's
 * annotations, entries in version order with the CSV's replaces and olm.skipRange.
 */
export function buildCatalog(bundles: readonly LoadedBundle[], o: CatalogOptions): { documents: KubeObject[]; packageName: string } {
  if (bundles.length === 0) throw new InputError(['name at least one bundle directory: chartpilot generate catalog bundle/ [more bundles...]']);
  const packages = [...new Set(bundles.map((b) => b.packageName))];
  const packageName = o.packageName ?? packages[0] ?? '';
  const problems: string[] = [];
  if (packages.length > 1 || packages[0] !== packageName) {
    problems.push(`the bundles belong to package(s) ${packages.join(', ')}, not one package ${packageName}: give bundles of one package (a catalog per package)`);
  }
  const sorted = [...bundles].sort((a, b) => compareSemver(csvInfo(a).version, csvInfo(b).version));
  const seen = new Set<string>();
  for (const b of sorted) {
    const { name } = csvInfo(b);
    if (seen.has(name)) problems.push(`${name} is given twice (${b.dir}): give each bundle version once`);
    seen.add(name);
  }
  const channels = [...new Set(sorted.flatMap((b) => b.channels))].sort();
  const newest = sorted[sorted.length - 1];
  const defaultChannel = o.defaultChannel ?? newest?.defaultChannel ?? newest?.channels[0] ?? '';
  if (!channels.includes(defaultChannel)) problems.push(`the default channel "${defaultChannel}" has no bundle (channels: ${channels.join(', ')}): set --default-channel to one of them`);
  for (const b of sorted) {
    const { replaces } = csvInfo(b);
    if (replaces !== undefined && !seen.has(replaces)) {
      problems.push(`${csvInfo(b).name} replaces ${replaces}, which is not among the bundles given: add its bundle directory, or regenerate without --replaces`);
    }
  }
  if (problems.length > 0) throw new InputError(problems);

  const icon = field(newest?.csv, 'spec', 'icon');
  const description = field(newest?.csv, 'spec', 'description');
  const pkg: KubeObject = {
    schema: 'olm.package',
    name: packageName,
    defaultChannel,
    ...(typeof description === 'string' && description !== '' ? { description } : {}),
    ...(Array.isArray(icon) && isPlainObject(icon[0]) ? { icon: icon[0] } : {}),
  };
  const channelDocs = channels.map((channel) => ({
    schema: 'olm.channel',
    package: packageName,
    name: channel,
    entries: sorted
      .filter((b) => b.channels.includes(channel))
      .map((b) => {
        const c = csvInfo(b);
        return { name: c.name, ...(c.replaces === undefined ? {} : { replaces: c.replaces }), ...(c.skipRange === undefined ? {} : { skipRange: c.skipRange }) };
      }),
  }));
  const bundleDocs = sorted.map((b) => {
    const { name, version } = csvInfo(b);
    const image = (o.bundleImage ?? '').replaceAll('{version}', version);
    return {
      schema: 'olm.bundle',
      name,
      package: packageName,
      image,
      properties: bundleProperties(b),
      relatedImages: relatedImages(b, image),
    };
  });
  return { documents: [pkg, ...channelDocs, ...bundleDocs], packageName };
}

export function catalogYaml(documents: readonly KubeObject[]): string {
  return yamlStream(documents);
}
