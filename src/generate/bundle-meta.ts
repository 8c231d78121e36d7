/**
 * What OperatorHub shows about an operator (display name, description, keywords, maintainers,
 * links, icon, minimum Kubernetes version), taken from a chart's Chart.yaml with flags on top.
 * Pure apart from reading the icon file: the CSV builder (bundle-csv.ts) only copies these.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse } from 'yaml';
import { fileText, type ChartFiles } from '../config/chart-files.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import { InputError } from './errors.js';

export interface Maintainer {
  readonly name: string;
  readonly email: string;
}

export interface Link {
  readonly name: string;
  readonly url: string;
}

export interface Icon {
  readonly base64data: string;
  readonly mediatype: string;
}

export interface HubMetadata {
  readonly displayName: string;
  readonly description: string;
  readonly provider: string;
  readonly keywords: readonly string[];
  readonly maintainers: readonly Maintainer[];
  readonly links: readonly Link[];
  readonly icon: Icon | undefined;
  /** e.g. 1.27.0, from Chart.yaml's kubeVersion lower bound. */
  readonly minKubeVersion: string | undefined;
}

/** Flags that override Chart.yaml; undefined leaves the chart's value. */
export interface HubOverrides {
  readonly displayName?: string | undefined;
  readonly description?: string | undefined;
  readonly provider?: string | undefined;
  readonly keywords?: readonly string[] | undefined;
  /** "Name <email>" each. */
  readonly maintainers?: readonly string[] | undefined;
  readonly minKubeVersion?: string | undefined;
  readonly icon?: Icon | undefined;
}

/** "webapp-operator" → "Webapp Operator". */
export function titleCase(name: string): string {
  return name
    .split(/[-_\s]+/u)
    .filter((w) => w !== '')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
}

/** The lower bound of a kubeVersion constraint such as ">=1.27.0-0" or ">= 1.25 < 1.35", as x.y.z. */
export function minKubeVersionOf(constraint: string): string | undefined {
  const m = />=?\s*v?(\d+)\.(\d+)(?:\.(\d+))?/u.exec(constraint);
  if (m === null) return undefined;
  return `${m[1] ?? '0'}.${m[2] ?? '0'}.${m[3] ?? '0'}`;
}

const MAINTAINER = /^\s*([^<>]+?)\s*<([^<>\s]+@[^<>\s]+)>\s*$/u;

/** Parses "Name <email>"; undefined when it is not that. */
export function parseMaintainer(text: string): Maintainer | undefined {
  const m = MAINTAINER.exec(text);
  return m === null ? undefined : { name: m[1] ?? '', email: m[2] ?? '' };
}

/**
 * OperatorHub metadata for the package, from the first chart's Chart.yaml and the flags, and one
 * warning per field OperatorHub wants but neither gave, naming the flag that sets it.
 */
export function hubMetadata(packageName: string, chart: ChartFiles, o: HubOverrides): { metadata: HubMetadata; warnings: string[]; problems: string[] } {
  const raw: unknown = parse(fileText(chart, 'Chart.yaml') ?? '', { version: '1.1' });
  const meta = isPlainObject(raw) ? raw : {};
  const text = (key: string): string => (typeof meta[key] === 'string' ? meta[key].trim() : '');
  const problems: string[] = [];
  const warnings: string[] = [];

  const chartMaintainers: Maintainer[] = (Array.isArray(meta['maintainers']) ? meta['maintainers'] : [])
    .filter(isPlainObject)
    .map((m) => ({ name: typeof m['name'] === 'string' ? m['name'] : '', email: typeof m['email'] === 'string' ? m['email'] : '' }))
    .filter((m) => m.name !== '');
  const maintainers: Maintainer[] = [];
  for (const m of o.maintainers ?? []) {
    const parsed = parseMaintainer(m);
    if (parsed === undefined) problems.push(`--maintainer "${m}" is not "Name <email>", e.g. --maintainer "Jane Doe <jane@example.com>"`);
    else maintainers.push(parsed);
  }
  const chartKeywords = (Array.isArray(meta['keywords']) ? meta['keywords'] : []).filter((k): k is string => typeof k === 'string' && k !== '');
  const links: Link[] = [];
  if (/^https?:\/\//u.test(text('home'))) links.push({ name: 'Home', url: text('home') });
  const sources = Array.isArray(meta['sources']) ? meta['sources'] : [];
  for (const s of sources) if (typeof s === 'string' && /^https?:\/\//u.test(s)) links.push({ name: 'Source', url: s });

  const minKube = o.minKubeVersion ?? (text('kubeVersion') === '' ? undefined : minKubeVersionOf(text('kubeVersion')));
  if (o.minKubeVersion !== undefined && !/^\d+\.\d+\.\d+$/u.test(o.minKubeVersion)) {
    problems.push(`--min-kube-version "${o.minKubeVersion}" is not a version such as 1.27.0`);
  }
  const firstMaintainer = maintainers[0] ?? chartMaintainers[0];
  const metadata: HubMetadata = {
    displayName: o.displayName ?? titleCase(packageName),
    description: o.description ?? text('description'),
    provider: o.provider ?? firstMaintainer?.name ?? '',
    keywords: o.keywords ?? chartKeywords,
    maintainers: maintainers.length > 0 ? maintainers : chartMaintainers,
    links,
    icon: o.icon,
    minKubeVersion: minKube,
  };

  const missing = (field: string, flag: string, source: string): void => {
    const how = [...(flag === '' ? [] : [flag]), ...(source === '' ? [] : [`${source} in Chart.yaml`])].join(' or ');
    warnings.push(`the bundle has no ${field} (OperatorHub shows it): set ${how}`);
  };
  if (metadata.description === '') missing('description', '--description', 'description');
  if (metadata.keywords.length === 0) missing('keywords', '--keyword', 'keywords');
  if (metadata.maintainers.length === 0) missing('maintainers', '--maintainer "Name <email>"', 'maintainers');
  if (metadata.provider === '') missing('provider', '--provider', '');
  if (metadata.links.length === 0) missing('links', '', 'home or sources');
  if (metadata.icon === undefined) {
    const chartIcon = text('icon');
    warnings.push(
      chartIcon === ''
        ? 'the bundle has no icon (OperatorHub shows it): set it with --icon <file.png|.svg>'
        : `the bundle has no icon: Chart.yaml names ${chartIcon}, but a bundle holds the image itself; download it and pass --icon <file>`,
    );
  }
  if (metadata.minKubeVersion === undefined) missing('minKubeVersion', '--min-kube-version', 'kubeVersion');
  return { metadata, warnings, problems };
}

const MEDIA_TYPES: Readonly<Record<string, string>> = { '.png': 'image/png', '.svg': 'image/svg+xml', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif' };

/** The media type an icon's bytes are (by their magic number), or undefined when they are no image OperatorHub shows. */
export function iconMediaType(bytes: Buffer): string | undefined {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  const head = bytes.subarray(0, 1024).toString('utf8');
  if (/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^>]*>\s*)?<svg[\s>]/u.test(head)) return 'image/svg+xml';
  return undefined;
}

/** Reads --icon: a PNG, SVG, JPEG or GIF file, checked by content, not by name. */
export async function readIcon(file: string): Promise<Icon> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new InputError([`cannot read --icon ${file}: ${errorMessage(err)}`]);
  }
  const mediatype = iconMediaType(bytes);
  if (mediatype === undefined) {
    const named = MEDIA_TYPES[extname(file).toLowerCase()];
    throw new InputError([
      `--icon ${file} is not an image${named === undefined ? '' : ` although its name says ${named}`}: give a PNG, SVG, JPEG or GIF file`,
    ]);
  }
  return { base64data: bytes.toString('base64'), mediatype };
}
