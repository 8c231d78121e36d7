/**
 * Per CR, when each step of a phase happened — from the audit log (who wrote what, when it took
 * effect) and the bench's watches (when a Deployment was available, the CR Ready, the CR gone) —
 * and the gaps between the steps as distributions over the phase's CRs. A gap that is long
 * although the step itself is short is a queue wait; helm's own time shows what is work.
 */
import { classify, type Agents, type AuditEntry } from './audit.js';
import type { Phase } from './contenders.js';
import { distribution, type Distribution } from './stats.js';

/** What the bench's watches saw, per release / CR name (ms since the epoch). */
export interface WatchTimes {
  available: ReadonlyMap<string, number>;
  ready: ReadonlyMap<string, number>;
  gone: ReadonlyMap<string, number>;
}

/** One CR's steps in one phase (ms since the epoch); absent when it did not happen in the window. */
export interface CrMarks {
  /** The bench's write that began the phase for this CR: its create, its spec patch, the collection delete. */
  requested?: number;
  /** The operator's first write on the CR itself, not a subresource: its finalizer on create. */
  finalizer?: number;
  /** First write of the release record this phase creates (`sh.helm.release.v1.<name>.v<rev>`). */
  recordCreated?: number;
  /** First update of that record: helm marking it deployed. */
  recordDeployed?: number;
  /** The operator's writes to the CR's status subresource, in order. */
  statusWrites: number[];
  /** Delete: the first write to any of the release's records (helm marks it uninstalling). */
  uninstallBegun?: number;
  /** Delete: the last release record deleted. */
  recordsDeleted?: number;
  /** Delete: the operator's last write on the CR itself, which removes its finalizer. */
  finalizerRemoved?: number;
  available?: number;
  ready?: number;
  gone?: number;
}

const RECORD = /^sh\.helm\.release\.v1\.(.+)\.v(\d+)$/;

/**
 * Marks for every name, from the phase window's audit entries (any order) and the watches.
 * crResource: the operator's CR plural; undefined for the floor, which has no CR.
 */
export function crMarks(
  phase: Phase,
  names: readonly string[],
  entries: readonly AuditEntry[],
  agents: Agents,
  crResource: string | undefined,
  watch: WatchTimes,
): Map<string, CrMarks> {
  const out = new Map<string, CrMarks>(names.map((n) => [n, { statusWrites: [] }]));
  const sorted = [...entries].sort((a, b) => a.completed - b.completed);
  const createdRecord = new Map<string, string>();
  for (const e of sorted) {
    const t = e.completed;
    // A refused write (a conflict, a CR already gone) changed nothing: it is no step.
    if (e.code >= 400) continue;
    if (crResource !== undefined && e.resource === crResource && e.group !== '') {
      const who = classify(e.userAgent, agents);
      if (who === 'bench') {
        // The collection delete names no CR: it begins the phase for all of them.
        const targets = e.name === '' ? names : [e.name];
        for (const n of targets) {
          const m = out.get(n);
          if (m !== undefined) m.requested ??= t;
        }
        continue;
      }
      const m = out.get(e.name);
      if (m === undefined || who !== 'operator') continue;
      if (e.subresource === 'status') m.statusWrites.push(t);
      else if (e.subresource === '') {
        m.finalizer ??= t;
        m.finalizerRemoved = t;
      }
      continue;
    }
    const rec = e.resource === 'secrets' && e.group === '' ? RECORD.exec(e.name) : null;
    const m = rec === null ? undefined : out.get(rec[1] ?? '');
    if (m === undefined) continue;
    m.uninstallBegun ??= t;
    if (e.verb === 'create' && m.recordCreated === undefined) {
      m.recordCreated = t;
      createdRecord.set(rec?.[1] ?? '', e.name);
    } else if (e.verb === 'update' && m.recordDeployed === undefined && createdRecord.get(rec?.[1] ?? '') === e.name) {
      m.recordDeployed = t;
    } else if (e.verb === 'delete') {
      m.recordsDeleted = t;
    }
  }
  for (const [n, m] of out) {
    const available = watch.available.get(n);
    const ready = watch.ready.get(n);
    const gone = watch.gone.get(n);
    if (available !== undefined) m.available = available;
    if (ready !== undefined) m.ready = ready;
    if (gone !== undefined) m.gone = gone;
    if (phase !== 'delete') {
      delete m.uninstallBegun;
      delete m.recordsDeleted;
      delete m.finalizerRemoved;
    } else {
      delete m.recordCreated;
      delete m.recordDeployed;
    }
    if (phase !== 'create') delete m.finalizer;
  }
  return out;
}

type Point = (m: CrMarks) => number | undefined;

const first = (ts: readonly number[], after: number | undefined): number | undefined =>
  after === undefined ? undefined : ts.find((t) => t >= after);

interface GapSpec {
  label: string;
  from: Point;
  to: Point;
}

const GAPS: Record<Phase, GapSpec[]> = {
  create: [
    { label: 'CR created → operator\'s finalizer write', from: (m) => m.requested, to: (m) => m.finalizer },
    { label: 'CR created → release record created', from: (m) => m.requested, to: (m) => m.recordCreated },
    { label: 'finalizer → release record created', from: (m) => m.finalizer, to: (m) => m.recordCreated },
    { label: 'release record created → deployed (helm\'s own time)', from: (m) => m.recordCreated, to: (m) => m.recordDeployed },
    { label: 'record deployed → next status write', from: (m) => m.recordDeployed, to: (m) => first(m.statusWrites, m.recordDeployed) },
    { label: 'record deployed → Deployment available', from: (m) => m.recordDeployed, to: (m) => m.available },
    { label: 'Deployment available → CR Ready seen', from: (m) => m.available, to: (m) => m.ready },
    { label: 'CR created → CR Ready seen', from: (m) => m.requested, to: (m) => m.ready },
  ],
  upgrade: [
    { label: 'spec patched → release record created', from: (m) => m.requested, to: (m) => m.recordCreated },
    { label: 'release record created → deployed (helm\'s own time)', from: (m) => m.recordCreated, to: (m) => m.recordDeployed },
    { label: 'record deployed → next status write', from: (m) => m.recordDeployed, to: (m) => first(m.statusWrites, m.recordDeployed) },
    { label: 'record deployed → Deployment rolled out', from: (m) => m.recordDeployed, to: (m) => m.available },
    { label: 'Deployment rolled out → CR Ready seen', from: (m) => m.available, to: (m) => m.ready },
    { label: 'spec patched → CR Ready seen', from: (m) => m.requested, to: (m) => m.ready },
  ],
  delete: [
    { label: 'delete requested → helm\'s first write to the release records', from: (m) => m.requested, to: (m) => m.uninstallBegun },
    { label: 'helm\'s first write → last release record deleted (uninstall)', from: (m) => m.uninstallBegun, to: (m) => m.recordsDeleted },
    { label: 'last record deleted → finalizer removed', from: (m) => m.recordsDeleted, to: (m) => m.finalizerRemoved },
    { label: 'finalizer removed → CR gone (seen)', from: (m) => m.finalizerRemoved, to: (m) => m.gone },
    { label: 'delete requested → CR gone (seen)', from: (m) => m.requested, to: (m) => m.gone },
  ],
};

export interface Gap {
  label: string;
  /** Seconds over the CRs that have both ends (a gap can be negative when the order differs). */
  seconds: Distribution;
}

export interface Timeline {
  gaps: Gap[];
  /** Operators: status writes per CR within the window. */
  statusWritesPerCr?: Distribution;
}

export function timelineGaps(phase: Phase, marks: ReadonlyMap<string, CrMarks>, hasCr: boolean): Timeline {
  const gaps: Gap[] = [];
  for (const g of GAPS[phase]) {
    const values: number[] = [];
    for (const m of marks.values()) {
      const a = g.from(m);
      const b = g.to(m);
      if (a !== undefined && b !== undefined) values.push((b - a) / 1000);
    }
    const d = distribution(values);
    if (d !== undefined) gaps.push({ label: g.label, seconds: d });
  }
  const status = hasCr ? distribution([...marks.values()].map((m) => m.statusWrites.length)) : undefined;
  return { gaps, ...(status === undefined ? {} : { statusWritesPerCr: status }) };
}

/** t_ready − t_available per CR, in seconds, for the CRs that have both. */
export function readyLag(watch: WatchTimes, names: readonly string[]): Distribution | undefined {
  const values: number[] = [];
  for (const n of names) {
    const a = watch.available.get(n);
    const r = watch.ready.get(n);
    if (a !== undefined && r !== undefined) values.push((r - a) / 1000);
  }
  return distribution(values);
}
