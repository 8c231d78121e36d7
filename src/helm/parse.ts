/**
 * Helm's JSON output → Release. Shapes verified against helm 4.1.4 (fixtures in
 * test/fixtures/helm/): `upgrade -o json` and `status -o json` print the stored release
 * (snake_case `info`, `chart.metadata`, `version` = revision); `history -o json` prints summaries
 * whose `chart` is "<name>-<version>". Parsing is defensive: a field helm leaves out becomes ''.
 *
 * Error messages here never quote the input: release JSON carries `config` (the user's values).
 */
import { HelmError, type Release, type ReleaseStatus } from './types.js';
import { asPlainObject } from '../lib/json.js';

const STATUSES: ReadonlySet<string> = new Set<ReleaseStatus>([
  'unknown',
  'deployed',
  'uninstalled',
  'superseded',
  'failed',
  'uninstalling',
  'pending-install',
  'pending-upgrade',
  'pending-rollback',
]);

export function toReleaseStatus(s: unknown): ReleaseStatus {
  return typeof s === 'string' && STATUSES.has(s) ? (s as ReleaseStatus) : 'unknown';
}


function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
function int(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) ? v : 0;
}

function parseJson(text: string, action: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    // Quote neither the text nor the SyntaxError's message: both can carry values.
    throw new HelmError('failed', `helm ${action} printed output that is not JSON (${text.length} bytes)`, action, {
      cause: err instanceof Error ? new Error(err.name) : undefined,
    });
  }
}

/** A full release as printed by `helm upgrade -o json` / `helm status -o json`. */
export function parseRelease(text: string, action: string): Release {
  const raw = parseJson(text, action);
  const r = asPlainObject(raw);
  const revision = int(r['version']);
  if (str(r['name']) === '' || revision === 0) {
    throw new HelmError('failed', `helm ${action} printed JSON that is not a release`, action);
  }
  const info = asPlainObject(r['info']);
  const meta = asPlainObject(asPlainObject(r['chart'])['metadata']);
  return {
    name: str(r['name']),
    namespace: str(r['namespace']),
    revision,
    status: toReleaseStatus(info['status']),
    chartName: str(meta['name']),
    chartVersion: str(meta['version']),
    appVersion: str(meta['appVersion']),
    notes: str(info['notes']),
    manifest: str(r['manifest']),
    description: str(info['description']),
  };
}

/**
 * `helm history -o json` summaries, oldest first. They carry neither notes nor manifest, and
 * the chart only as "<name>-<version>", split by `splitChartRef`.
 */
export function parseHistory(text: string, release: string, namespace: string): Release[] {
  const raw = parseJson(text, 'history');
  if (!Array.isArray(raw)) throw new HelmError('failed', 'helm history printed JSON that is not a list', 'history');
  return raw
    .map((entry): Release => {
      const e = asPlainObject(entry);
      const { name, version } = splitChartRef(str(e['chart']));
      return {
        name: release,
        namespace,
        revision: int(e['revision']),
        status: toReleaseStatus(e['status']),
        chartName: name,
        chartVersion: version,
        appVersion: str(e['app_version']),
        notes: '',
        manifest: '',
        description: str(e['description']),
      };
    })
    .sort((a, b) => a.revision - b.revision);
}

/** SemVer 2 (helm requires chart versions to be SemVer). */
const SEMVER = /^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/**
 * Splits "my-app-1.2.3-rc.1" at the first dash whose remainder is a SemVer: chart names may
 * contain dashes and digits ("app-2"), versions may contain dashes (pre-releases).
 */
export function splitChartRef(ref: string): { name: string; version: string } {
  for (let i = ref.indexOf('-'); i > 0; i = ref.indexOf('-', i + 1)) {
    const version = ref.slice(i + 1);
    if (SEMVER.test(version)) return { name: ref.slice(0, i), version };
  }
  return { name: ref, version: '' };
}

/**
 * `helm get all --template` fields for a full release. Used instead of `helm status -o json`,
 * which in helm 4 omits the chart metadata and GETs every live object of the release (its
 * `info.resources`), while `get all` reads only the release record.
 */
const TEMPLATE_FIELDS = [
  ['name', '{{ .Release.Name }}'],
  ['namespace', '{{ .Release.Namespace }}'],
  ['revision', '{{ .Release.Version }}'],
  ['status', '{{ with .Release.Info }}{{ .Status }}{{ end }}'],
  ['description', '{{ with .Release.Info }}{{ .Description }}{{ end }}'],
  ['notes', '{{ with .Release.Info }}{{ .Notes }}{{ end }}'],
  ['chartName', '{{ with .Release.Chart }}{{ with .Metadata }}{{ .Name }}{{ end }}{{ end }}'],
  ['chartVersion', '{{ with .Release.Chart }}{{ with .Metadata }}{{ .Version }}{{ end }}{{ end }}'],
  ['appVersion', '{{ with .Release.Chart }}{{ with .Metadata }}{{ .AppVersion }}{{ end }}{{ end }}'],
  ['manifest', '{{ .Release.Manifest }}'],
] as const;

type TemplateField = (typeof TEMPLATE_FIELDS)[number][0];

/**
 * The Go template for `helm get all --template`. Free text (notes, manifest) is printed raw
 * between `boundary` markers; callers pass a fresh random boundary so no chart can contain it.
 */
export function releaseTemplate(boundary: string): string {
  return `${TEMPLATE_FIELDS.map(([key, tpl]) => `${boundary}${key}\n${tpl}`).join('')}${boundary}end\n`;
}

export function parseReleaseTemplate(out: string, boundary: string): Release {
  const parts = out.split(boundary);
  const fields = new Map<string, string>();
  // parts[0] is whatever precedes the first marker (nothing); the last part is "end\n".
  for (const part of parts.slice(1)) {
    const nl = part.indexOf('\n');
    fields.set(nl < 0 ? part : part.slice(0, nl), nl < 0 ? '' : part.slice(nl + 1));
  }
  const expected = TEMPLATE_FIELDS.length + 1;
  if (parts.length !== expected + 1 || fields.size !== expected || !fields.has('end')) {
    throw new HelmError('failed', 'helm get all printed output in an unexpected shape', 'status');
  }
  const get = (k: TemplateField): string => fields.get(k) ?? '';
  const revision = Number(get('revision'));
  if (!Number.isInteger(revision) || revision < 1) {
    throw new HelmError('failed', 'helm get all printed no revision number', 'status');
  }
  return {
    name: get('name'),
    namespace: get('namespace'),
    revision,
    status: toReleaseStatus(get('status')),
    chartName: get('chartName'),
    chartVersion: get('chartVersion'),
    appVersion: get('appVersion'),
    notes: get('notes'),
    manifest: get('manifest'),
    description: get('description'),
  };
}
