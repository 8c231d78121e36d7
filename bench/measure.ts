/**
 * A phase's figures from the audit log and the watches: who wrote how much over the equal window,
 * the settled time, the Ready lag and the per-CR timeline. The I/O (watching, reading the log)
 * is the scenario's; this only computes.
 */
import { attribute, inWindow, type Agents, type AuditEntry, type WriteAttribution } from './audit.js';
import type { Kind } from './cluster-ops.js';
import type { Phase } from './contenders.js';
import type { Distribution } from './stats.js';
import { crMarks, readyLag, timelineGaps, type Timeline, type WatchTimes } from './timeline.js';

export interface PhaseWrites extends WriteAttribution {
  /** Where the window ends: `settled` (create, upgrade), the phase's own end (delete), the idle window. */
  window: 'settled' | 'converged' | 'idle';
  seconds: number;
  /** The contender's writes (operator + helm) divided by N. */
  contenderPerCr: number;
  /** All writes but the bench's from the phase start to convergence: the audit's view of apiWrites. */
  toConverged?: number;
}

export interface PhaseMeasures {
  /**
   * Create/upgrade: seconds until the contender had converged AND every Deployment of the
   * namespace was rolled out; the end of the equal window for every contender.
   */
  settledSeconds?: number;
  /** Seconds until every Deployment of the namespace was rolled out (may precede convergence). */
  rolledOutSeconds?: number;
  /** All writes but the bench's over the equal window (audit log). */
  windowWrites?: number;
  /** The contender's writes per CR over the equal window (audit log). */
  contenderWritesPerCr?: number;
  writes?: PhaseWrites;
  /** t_ready − t_available per CR (s), for operators that write a Ready condition. */
  readyLag?: Distribution;
  timeline?: Timeline;
}

export interface PhaseInput {
  phase: Phase;
  names: readonly string[];
  /** ms since the epoch. */
  start: number;
  converged: number;
  /** When the wait for rolled-out Deployments ended with success (create, upgrade). */
  settled: number | undefined;
  rolledOut: number | undefined;
  /** Audit entries received within [start, settled ?? converged]. */
  entries: readonly AuditEntry[];
  agents: Agents;
  kind: Kind | undefined;
  watch: WatchTimes & { readyTracked: boolean };
}

export function writesOver(entries: readonly AuditEntry[], agents: Agents, n: number, seconds: number, window: PhaseWrites['window']): PhaseWrites {
  const a = attribute(entries, agents);
  return { window, seconds, ...a, contenderPerCr: n === 0 ? 0 : a.contender / n };
}

export function phaseMeasures(p: PhaseInput): PhaseMeasures {
  const end = p.settled ?? p.converged;
  const n = p.names.length;
  const writes = writesOver(p.entries, p.agents, n, (end - p.start) / 1000, p.settled === undefined ? 'converged' : 'settled');
  writes.toConverged = attribute(inWindow(p.entries, p.start, p.converged), p.agents).total;
  const lag = p.watch.readyTracked ? readyLag(p.watch, p.names) : undefined;
  const marks = crMarks(p.phase, p.names, p.entries, p.agents, p.kind?.plural, p.watch);
  return {
    ...(p.settled === undefined ? {} : { settledSeconds: (p.settled - p.start) / 1000 }),
    ...(p.rolledOut === undefined ? {} : { rolledOutSeconds: (p.rolledOut - p.start) / 1000 }),
    windowWrites: writes.total,
    contenderWritesPerCr: writes.contenderPerCr,
    writes,
    ...(lag === undefined ? {} : { readyLag: lag }),
    timeline: timelineGaps(p.phase, marks, p.kind !== undefined),
  };
}
