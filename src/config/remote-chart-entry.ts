/**
 * The watches.yaml keys of a chart from a registry: `chart: oci://host/path/name`, or
 * `repository: https://…` with `chart: <name>`; `chartVersion`, `chartDigest`,
 * `chartRefreshInterval` and `chartPullSecret`. Pure: each problem is one line naming the key,
 * what was found and what would be right; conflicting keys are named together.
 */
import { floorText, PERIOD_FLOORS } from '../lib/period-floors.js';
import { isScalar } from 'yaml';
import type { RemoteChart } from './types.js';
import { DURATION_EXAMPLES, parseGoDuration } from '../lib/duration.js';
import { parseConstraint } from './chart-version.js';
import { isDnsSubdomain } from './labels.js';
import { describeNode, scalarText, type Field } from './yaml-nodes.js';

export const REMOTE_CHART_KEYS = ['repository', 'chartVersion', 'chartDigest', 'chartRefreshInterval', 'chartPullSecret'] as const;
export type RemoteChartKey = (typeof REMOTE_CHART_KEYS)[number];

/** Spellings other tools use for the same thing: named in "did you mean" hints. */
export const REMOTE_KEY_HINTS: Readonly<Record<string, RemoteChartKey>> = {
  digest: 'chartDigest',
  repo: 'repository',
  repoURL: 'repository',
  url: 'repository',
  chartRepository: 'repository',
  secretRef: 'chartPullSecret',
  pullSecret: 'chartPullSecret',
  interval: 'chartRefreshInterval',
};

const DIGEST = /^sha256:[a-f0-9]{64}$/u;

export interface RemoteChartInput {
  /** `chart` as written (a non-empty string). */
  readonly chart: string;
  /** The fields of these keys the entry has. */
  readonly fields: ReadonlyMap<RemoteChartKey, Field>;
  /** Prefix for a problem: entry label and line. */
  readonly where: (f: Field | undefined) => string;
}

/** Whether `chart` names a chart in a registry rather than a path. */
export function isOciReference(chart: string): boolean {
  return chart.toLowerCase().startsWith('oci://');
}

/**
 * The remote chart an entry names, or undefined for a local chart. Problems are appended; a local
 * chart with registry-only keys is a problem too (they would silently do nothing).
 */
export function readRemoteChart(input: RemoteChartInput, problems: string[]): RemoteChart | undefined {
  const { chart, fields, where } = input;
  const text = (k: RemoteChartKey): string | undefined => {
    const f = fields.get(k);
    if (f === undefined || f.value === null) return undefined;
    if (isScalar(f.value) && (typeof f.value.value === 'string' || typeof f.value.value === 'number')) return scalarText(f.value).trim();
    problems.push(`${where(f)}: ${k} is ${describeNode(f.value)}; expected a string`);
    return undefined;
  };
  const repository = text('repository');
  const oci = isOciReference(chart);
  if (!oci && repository === undefined) {
    const given = REMOTE_CHART_KEYS.filter((k) => k !== 'repository' && fields.has(k));
    for (const k of given) {
      problems.push(
        `${where(fields.get(k))}: ${k} applies to a chart from a registry (chart: oci://… or repository: https://…); chart "${chart}" is a local chart, whose version is its Chart.yaml — remove ${k}`,
      );
    }
    return undefined;
  }

  let type: RemoteChart['type'];
  let location = '';
  let name = '';
  let reference = '';
  if (oci) {
    type = 'oci';
    if (repository !== undefined) {
      problems.push(
        `${where(fields.get('repository'))}: repository is for HTTP(S) Helm repositories, but chart "${chart}" is an OCI reference that names the chart in full — remove repository`,
      );
    }
    const parsed = parseOciReference(chart);
    if (!parsed.ok) {
      problems.push(`${where(undefined)}: chart "${chart}" ${parsed.reason}`);
    } else {
      ({ location, name } = parsed);
      reference = `oci://${location}/${name}`;
    }
  } else {
    type = 'repository';
    const url = parseRepositoryUrl(repository ?? '');
    if (!url.ok) problems.push(`${where(fields.get('repository'))}: repository "${repository ?? ''}" ${url.reason}`);
    else location = url.url;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/u.test(chart)) {
      problems.push(
        `${where(undefined)}: with repository, chart is the chart's name in that repository's index.yaml (e.g. webapp), not "${chart}"`,
      );
    }
    name = chart;
    reference = `${location}/ ${chart}`;
  }

  const version = text('chartVersion');
  if (version !== undefined) {
    const c = parseConstraint(version);
    if (!c.ok) problems.push(`${where(fields.get('chartVersion'))}: chartVersion ${c.reason}`);
  }
  const digest = text('chartDigest');
  if (digest !== undefined && !DIGEST.test(digest)) {
    problems.push(
      `${where(fields.get('chartDigest'))}: chartDigest "${digest}" is not a digest; write sha256: and 64 lower-case hex digits, as \`helm push\` prints it (oci) or index.yaml lists it (repository)`,
    );
  }
  const refreshIntervalMs = readInterval(fields.get('chartRefreshInterval'), where, problems);
  const pullSecret = text('chartPullSecret');
  if (pullSecret !== undefined && !isDnsSubdomain(pullSecret)) {
    problems.push(`${where(fields.get('chartPullSecret'))}: chartPullSecret "${pullSecret}" is not a Secret name (lower-case letters, digits, '-' and '.')`);
  }
  return {
    type,
    reference,
    location,
    name,
    version: version === '' ? undefined : version,
    digest,
    refreshIntervalMs,
    pullSecret,
  };
}

function readInterval(f: Field | undefined, where: (f: Field | undefined) => string, problems: string[]): number | undefined {
  if (f === undefined || f.value === null) return undefined;
  if (isScalar(f.value) && f.value.value === 0) return 0;
  if (!isScalar(f.value) || typeof f.value.value !== 'string') {
    problems.push(`${where(f)}: chartRefreshInterval is ${describeNode(f.value)}; expected a Go duration ${DURATION_EXAMPLES}, or 0 to resolve once`);
    return undefined;
  }
  const parsed = parseGoDuration(f.value.value.trim());
  if (!parsed.ok) {
    problems.push(`${where(f)}: chartRefreshInterval ${parsed.reason}`);
    return undefined;
  }
  if (parsed.ms < 0) {
    problems.push(`${where(f)}: chartRefreshInterval "${f.value.value}" is negative; use e.g. 10m, or 0 to resolve once`);
    return undefined;
  }
  const floor = PERIOD_FLOORS.chartRefreshIntervalMs;
  if (parsed.ms > 0 && parsed.ms < floor) {
    problems.push(`${where(f)}: chartRefreshInterval "${f.value.value}" is below the minimum of ${floorText(floor)}; use e.g. 10m, or 0 to resolve once`);
    return undefined;
  }
  return parsed.ms;
}

export type OciReference = { ok: true; location: string; name: string } | { ok: false; reason: string };

/** `oci://host[:port]/path/name` → registry host and repository path. */
export function parseOciReference(text: string): OciReference {
  const rest = text.slice('oci://'.length);
  const slash = rest.indexOf('/');
  const host = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash + 1).replace(/\/+$/u, '');
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$/u.test(host) && !/^\[[0-9a-fA-F:]+\](:\d{1,5})?$/u.test(host)) {
    return { ok: false, reason: 'does not start with a registry host; write oci://<host>[:<port>]/<path>/<chart>, e.g. oci://registry.example.com/charts/webapp' };
  }
  if (/[@:]/u.test(path)) {
    return { ok: false, reason: 'carries a tag or digest; name the chart only, and put the version in chartVersion and a digest in chartDigest' };
  }
  if (path === '' || !/^[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/u.test(path)) {
    return { ok: false, reason: 'has no valid repository path after the host; write oci://<host>/<path>/<chart> with lower-case path components' };
  }
  return { ok: true, location: host.toLowerCase(), name: path };
}

export type RepositoryUrl = { ok: true; url: string } | { ok: false; reason: string };

export function parseRepositoryUrl(text: string): RepositoryUrl {
  if (isOciReference(text)) {
    return { ok: false, reason: 'is an OCI registry; name the chart in full instead: chart: oci://<host>/<path>/<chart>, without repository' };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'is not a URL; write the repository address as helm repo add takes it, e.g. https://charts.example.com' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'must be an https:// (or http://) URL' };
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'holds credentials; put them in a Secret named by chartPullSecret (keys username and password)' };
  }
  if (url.search !== '' || url.hash !== '') return { ok: false, reason: 'must not have a query or fragment' };
  return { ok: true, url: url.toString().replace(/\/+$/u, '') };
}
