/**
 * The API server's audit log (devcluster's auditLog: writes only, level Metadata, one JSON event
 * per line): parsing, and who made each write, by user agent.
 *
 *   operator       the contender's operator process
 *   helm           Helm working for the contender (its own processes, or operator-sdk's in-process Helm)
 *   bench          the bench itself (CR creates, spec patches, the collection delete, markers)
 *   control-plane  controller manager, scheduler, kwok, the API server itself, anything else
 */
import type { ContenderName } from './contenders.js';

/** One write, as much of the audit event as the bench uses. Times in ms since the epoch (µs kept as fractions). */
export interface AuditEntry {
  verb: string;
  userAgent: string;
  /** '' for the core group. */
  group: string;
  resource: string;
  /** '' for the object itself. */
  subresource: string;
  namespace: string;
  /** '' for collection requests (deletecollection). */
  name: string;
  code: number;
  /** requestReceivedTimestamp: what decides the phase window an entry belongs to. */
  received: number;
  /** stageTimestamp at ResponseComplete: when the write took effect (the per-CR timeline). */
  completed: number;
}

export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** RFC 3339 with up to nanoseconds, as the API server writes them; NaN if unreadable. */
export function parseTimestamp(s: string): number {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(s);
  if (m === null) return Number.NaN;
  const whole = Date.parse(`${m[1] ?? ''}Z`);
  const frac = m[2] === undefined ? 0 : Number(`0.${m[2]}`) * 1000;
  return whole + frac;
}

interface RawEvent {
  stage?: string;
  verb?: string;
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

/** One line of the log; undefined for anything but a completed write (or a line that is not JSON). */
export function parseAuditLine(line: string): AuditEntry | undefined {
  let e: RawEvent;
  try {
    e = JSON.parse(line) as RawEvent;
  } catch {
    return undefined;
  }
  if (e.stage !== 'ResponseComplete' || e.verb === undefined || !WRITE_VERBS.has(e.verb)) return undefined;
  const received = parseTimestamp(e.requestReceivedTimestamp ?? '');
  if (Number.isNaN(received)) return undefined;
  const completed = parseTimestamp(e.stageTimestamp ?? '');
  const ref = e.objectRef ?? {};
  return {
    verb: e.verb,
    userAgent: e.userAgent ?? '',
    group: ref.apiGroup ?? '',
    resource: ref.resource ?? '',
    subresource: ref.subresource ?? '',
    namespace: ref.namespace ?? '',
    name: ref.name ?? '',
    code: e.responseStatus?.code ?? 0,
    received,
    completed: Number.isNaN(completed) ? received : completed,
  };
}

export type Writer = 'operator' | 'helm' | 'bench' | 'control-plane';

/** The user agents of one contender's processes. */
export interface Agents {
  operator?: RegExp;
  helm: RegExp;
}

export const BENCH_AGENT = 'chartpilot-bench';

/**
 * Seen in real runs against devcluster (kube-apiserver v1.33): helm 4 sends `Helm/4.1.4`;
 * chartpilot sends `chartpilot`; helm-operator v1.42.0 sends client-go's default
 * `helm-operator/v0.0.0 (linux/amd64) kubernetes/$Format` for its own writes AND for its
 * in-process Helm's release records (Helm's storage driver uses the manager's client), while its
 * in-process Helm creates, patches and deletes the chart's objects with Go's bare
 * `Go-http-client/2.0` (a client built without a user agent). No control-plane component sends
 * that one (each names itself), so here it counts as operator-sdk's Helm.
 */
export const CONTENDER_AGENTS: Record<ContenderName, Agents> = {
  floor: { helm: /^Helm\// },
  'floor-postrender': { helm: /^Helm\// },
  'operator-sdk': { operator: /^helm-operator\//, helm: /^(?:Helm|Go-http-client)\// },
  chartpilot: { operator: /^chartpilot$/, helm: /^Helm\// },
};

export function classify(userAgent: string, agents: Agents): Writer {
  if (userAgent === BENCH_AGENT) return 'bench';
  if (agents.operator?.test(userAgent) === true) return 'operator';
  if (agents.helm.test(userAgent)) return 'helm';
  return 'control-plane';
}

const COMPONENTS = ['kube-controller-manager', 'kube-scheduler', 'kwok', 'kube-apiserver'] as const;

/** Which control-plane process a user agent is (`other` for anything unnamed). */
export function component(userAgent: string): string {
  const product = userAgent.split('/')[0] ?? '';
  return (COMPONENTS as readonly string[]).includes(product) ? product : 'other';
}

/** `verb resource[/subresource]`, e.g. `patch webappchartpilots/status`. */
export const writeKey = (e: AuditEntry): string => `${e.verb} ${e.resource}${e.subresource === '' ? '' : `/${e.subresource}`}`;

export interface WriteAttribution {
  /** Every write in the window but the bench's own. */
  total: number;
  /** operator + helm. */
  contender: number;
  operator: number;
  helm: number;
  controlPlane: number;
  bench: number;
  /** The contender's writes the API server refused (status ≥ 400: conflicts, mostly). */
  contenderRefused: number;
  operatorByKey: Record<string, number>;
  helmByKey: Record<string, number>;
  controlPlaneByComponent: Record<string, number>;
}

const bump = (m: Record<string, number>, k: string): void => { m[k] = (m[k] ?? 0) + 1; };

export function attribute(entries: Iterable<AuditEntry>, agents: Agents): WriteAttribution {
  const out: WriteAttribution = {
    total: 0, contender: 0, operator: 0, helm: 0, controlPlane: 0, bench: 0, contenderRefused: 0,
    operatorByKey: {}, helmByKey: {}, controlPlaneByComponent: {},
  };
  for (const e of entries) {
    const who = classify(e.userAgent, agents);
    if (who === 'bench') {
      out.bench++;
      continue;
    }
    out.total++;
    if (who === 'control-plane') {
      out.controlPlane++;
      bump(out.controlPlaneByComponent, component(e.userAgent));
      continue;
    }
    out.contender++;
    if (e.code >= 400) out.contenderRefused++;
    if (who === 'operator') {
      out.operator++;
      bump(out.operatorByKey, writeKey(e));
    } else {
      out.helm++;
      bump(out.helmByKey, writeKey(e));
    }
  }
  return out;
}

/** Entries whose request was received within [from, to] (ms since the epoch). */
export function inWindow(entries: readonly AuditEntry[], from: number, to: number): AuditEntry[] {
  return entries.filter((e) => e.received >= from && e.received <= to);
}
