/**
 * Which fields the chart sets that the live object no longer has. Only fields present in the
 * rendered object count: whatever the API server defaulted or others added (a label, an
 * annotation, a sidecar's env var on a container the chart does not list) is not drift.
 *
 * The comparison forgives what the API server itself rewrites, so that an untouched object is
 * never reported: quantities (`0.1` → `100m`), int-or-string values (`80` / `"80"`), Go's
 * omitempty (a desired `""`, `0`, `false`, `{}`, `[]` or `null` the server drops), `stringData` of
 * Secrets (stored as base64 `data`), and a Service's `clusterIP: ""` (allocated by the server).
 */
import { sameQuantity } from './quantity.js';
import { isPlainObject } from '../lib/json.js';
import { isWithin } from '../lib/json-pointer.js';

type Path = readonly (string | number)[];

/** Top-level fields that are never the chart's to set. */
const IGNORED_TOP = new Set(['status', 'apiVersion', 'kind']);
/** Metadata the server or other controllers own. */
const IGNORED_METADATA = new Set([
  'resourceVersion',
  'uid',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'generateName',
  // Objects are matched by namespace before comparing; a namespace the chart wrote on a
  // cluster-scoped object is dropped by the server and must not count.
  'namespace',
  // The garbage collector and other controllers add and remove these on their own.
  'ownerReferences',
  'finalizers',
]);
/** Maps whose values are quantities (container resources, ResourceQuota, Node, Pod overhead). */
const QUANTITY_MAPS = new Set(['requests', 'limits', 'hard', 'overhead', 'capacity', 'allocatable']);
/** LimitRange's quantity maps (`spec.limits[].max.cpu`): names too generic to trust elsewhere. */
const LIMIT_RANGE_MAPS = new Set(['default', 'defaultRequest', 'max', 'min', 'maxLimitRequestRatio']);

/**
 * Paths (like `spec.replicas`, `metadata.labels["app.kubernetes.io/name"]`) of drifted fields.
 * Fields at or under a path of `leaveAlone` (JSON pointer segments) are others' to set: not compared.
 */
export function driftedFields(desired: object, live: object, leaveAlone: readonly (readonly string[])[] = []): string[] {
  return driftedPaths(desired, live, leaveAlone).map(formatPath);
}

/** driftedFields as paths of segments (numbers are list indexes), for rules and ownership. */
export function driftedPaths(desired: object, live: object, leaveAlone: readonly (readonly string[])[] = []): Path[] {
  const kind = (desired as { kind?: unknown }).kind;
  const ctx: Context = { kind: typeof kind === 'string' ? kind : '', out: [], leaveAlone };
  compare(normalizeDesired(desired, ctx.kind), live, [], ctx);
  return ctx.out;
}

export type { Path as FieldPath };

interface Context {
  readonly kind: string;
  readonly out: Path[];
  readonly leaveAlone: readonly (readonly string[])[];
}

function compare(desired: unknown, live: unknown, path: Path, ctx: Context): void {
  if (ignored(path, desired, ctx.kind)) return;
  if (ctx.leaveAlone.some((p) => isWithin(path, p))) return;
  if (desired === null || desired === undefined) return; // nothing wanted
  if (live === null || live === undefined) {
    if (!isZero(desired)) ctx.out.push(path);
    return;
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) {
      ctx.out.push(path);
      return;
    }
    // An empty list is what the server drops anyway: it asks for nothing, like an absent one.
    if (desired.length === 0) return;
    if (desired.length !== live.length) {
      ctx.out.push(path);
      return;
    }
    desired.forEach((d, i) => {
      compare(d, live[i], [...path, i], ctx);
    });
    return;
  }
  if (isPlainObject(desired)) {
    if (!isPlainObject(live)) {
      ctx.out.push(path);
      return;
    }
    for (const key of Object.keys(desired)) compare(desired[key], live[key], [...path, key], ctx);
    return;
  }
  if (!sameScalar(desired, live, path, ctx.kind)) ctx.out.push(path);
}

function ignored(path: Path, desired: unknown, kind: string): boolean {
  if (path.length === 1) return IGNORED_TOP.has(String(path[0]));
  if (path.length === 2 && path[0] === 'metadata') return IGNORED_METADATA.has(String(path[1]));
  // The server allocates a Service's IPs when the chart asks for "" (or leaves them out).
  if (kind === 'Service' && path[0] === 'spec' && (path[1] === 'clusterIP' || path[1] === 'clusterIPs')) {
    return desired === '' || (Array.isArray(desired) && desired.every((v) => v === ''));
  }
  return false;
}

function sameScalar(desired: unknown, live: unknown, path: Path, kind: string): boolean {
  if (desired === live) return true;
  const d = typeof desired === 'number' || typeof desired === 'string' ? desired : undefined;
  const l = typeof live === 'number' || typeof live === 'string' ? live : undefined;
  if (d === undefined || l === undefined) return false;
  // int-or-string: 8080 and "8080" are the same port.
  if (String(d) === String(l)) return true;
  return isQuantityPath(path, kind) && sameQuantity(d, l);
}

function isQuantityPath(path: Path, kind: string): boolean {
  const key = path.at(-1);
  const parent = path.at(-2);
  if (key === 'sizeLimit') return true; // emptyDir
  if (typeof parent !== 'string') return false;
  if (QUANTITY_MAPS.has(parent)) return true;
  return kind === 'LimitRange' && LIMIT_RANGE_MAPS.has(parent);
}

/** What the server drops as an omitempty zero value (or never stores): absent is the same. */
function isZero(v: unknown): boolean {
  if (v === null || v === undefined || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isPlainObject(v)) return Object.values(v).every(isZero);
  return false;
}

/** Rewrites the desired object into the form the server stores it in. */
function normalizeDesired(desired: object, kind: string): object {
  if (kind !== 'Secret' || !isPlainObject(desired) || !isPlainObject(desired.stringData)) return desired;
  // The server merges stringData into data (stringData wins) and never returns stringData.
  const data: Record<string, unknown> = isPlainObject(desired.data) ? { ...desired.data } : {};
  for (const [k, v] of Object.entries(desired.stringData)) {
    data[k] = typeof v === 'string' ? Buffer.from(v, 'utf8').toString('base64') : v;
  }
  const { stringData: _dropped, ...rest } = desired;
  return { ...rest, data };
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function formatPath(path: Path): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (IDENTIFIER.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}
