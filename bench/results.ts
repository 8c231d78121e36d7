/** One contender's measured results: shared by the report and its sections (no import cycle between them). */
import type { ContenderName, ReplicaFigure } from './contenders.js';
import type { CgroupFigures } from './memory-cgroup.js';
import type { RssPeaks } from './proc.js';
import type { ScenarioResult } from './scenario.js';

export interface ContenderResult {
  name: ContenderName;
  status: 'ok' | 'failed' | 'skipped';
  reason?: string;
  /** Seconds from spawning the operator to its "started" log line. */
  startupSeconds?: number;
  /** The operator's RSS right after start-up, before any CR exists (MiB). */
  startupRssMiB?: number;
  scenarios: ScenarioResult[];
  overall?: RssPeaks;
  /** chartpilot with --replicas: each replica's CPU (whole run) and peak RSS. */
  replicas?: ReplicaFigure[];
  /** With --memory-limit-mib: the operator's memory cgroup over the whole run. */
  cgroup?: CgroupFigures;
}
