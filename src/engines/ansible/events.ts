/**
 * What a run did, told from ansible-runner's job events (`ansible-runner run --json`: one JSON
 * event per stdout line, as it happens), counted as ansible-operator counts them
 * (internal/ansible/controller/reconcile.go): `playbook_on_stats` gives ok/changed/skipped/failures,
 * `runner_on_failed` without `ignore_errors` names a failed task and its `res.msg`, an
 * `operator_sdk.util.requeue_after` task's `res.period` asks for the next run, and a
 * `k8s_status` task means the role wrote the CR's status itself. Anything else on stdout is
 * Ansible's own output before a playbook starts (a YAML error, a missing role or module), kept
 * for the error message of a run that never reached its stats.
 */
import { parseGoDuration } from '../../lib/duration.js';
import { PERIOD_FLOORS } from '../../lib/period-floors.js';
import { redactSecrets } from '../../lib/redact.js';

/** One ansible-runner job event, as far as chartpilot reads it. */
export interface RunnerEvent {
  readonly event: string;
  readonly counter?: number;
  readonly uuid?: string;
  readonly event_data?: Readonly<Record<string, unknown>>;
}

export interface RunStats {
  readonly ok: number;
  readonly changed: number;
  readonly skipped: number;
  readonly failures: number;
}

export interface FailedTask {
  readonly task: string;
  readonly message: string;
}

export interface EventSummary {
  /** Whether `playbook_on_stats` arrived: the playbook ran to its end (with or without failures). */
  readonly finished: boolean;
  readonly stats: RunStats;
  /** Failed tasks that failed the run (not ignored, not rescued), messages redacted and bounded. */
  readonly failedTasks: readonly FailedTask[];
  readonly requeueAfterMs: number | undefined;
  readonly statusWrittenByRole: boolean;
  /** Ansible's first `[ERROR]` line outside events (with its `Origin:`), redacted; '' if none. */
  readonly outputError: string;
}

/** The longest task message kept: a k8s task's error can carry a whole API response. */
export const MAX_TASK_MESSAGE_LENGTH = 500;
/** How many lines of non-event output are kept to explain a run that did not start. */
const MAX_OUTPUT_LINES = 40;

const REQUEUE_ACTIONS = new Set(['requeue_after', 'operator_sdk.util.requeue_after']);
const STATUS_ACTIONS = new Set(['k8s_status', 'operator_sdk.util.k8s_status']);
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/gu;

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A stdout line as an event, or undefined when it is not one (Ansible's own output). */
export function parseEventLine(line: string): RunnerEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const v: unknown = JSON.parse(line);
    return isMap(v) && typeof v['event'] === 'string' ? (v as unknown as RunnerEvent) : undefined;
  } catch {
    return undefined;
  }
}

interface Failure extends FailedTask {
  readonly host: string;
}

/**
 * Folds events as they arrive; keeps only what the summary needs (a run's events can be large,
 * a k8s_info result holds whole objects).
 */
export class EventTally {
  private stats: Readonly<Record<string, unknown>> | undefined;
  private readonly failures: Failure[] = [];
  private requeueAfterMs: number | undefined;
  private statusWritten = false;
  private readonly output: string[] = [];

  add(e: RunnerEvent): void {
    const data = e.event_data ?? {};
    if (e.event === 'playbook_on_stats') {
      this.stats = data;
      return;
    }
    const action = text(data['task_action']) ?? '';
    const resolved = text(data['resolved_action']) ?? '';
    if (e.event === 'runner_on_ok') {
      const res = isMap(data['res']) ? data['res'] : {};
      if ((REQUEUE_ACTIONS.has(action) || REQUEUE_ACTIONS.has(resolved)) && this.requeueAfterMs === undefined) {
        // The first one counts, as in ansible-operator (it stops reading there).
        const period = text(res['period']);
        const parsed = period === undefined ? undefined : parseGoDuration(period);
        // Floored as a CR's reconcile-period annotation is: the period may come from a spec value
        // (`time: "{{ poll_interval }}"`), and `1ms` would make the CR a run loop.
        if (parsed?.ok === true && parsed.ms > 0) this.requeueAfterMs = Math.max(parsed.ms, PERIOD_FLOORS.reconcilePeriodMs);
      }
      if (STATUS_ACTIONS.has(action) || STATUS_ACTIONS.has(resolved)) this.statusWritten = true;
      return;
    }
    if ((e.event === 'runner_on_failed' && data['ignore_errors'] !== true) || e.event === 'runner_on_unreachable') {
      this.failures.push({ host: text(data['host']) ?? '', task: taskName(data), message: failureMessage(data) });
    }
  }

  /** A stdout line that is not an event. */
  addOutput(line: string): void {
    if (this.output.length < MAX_OUTPUT_LINES) this.output.push(line.replace(ANSI, '').trimEnd());
  }

  summary(secrets: readonly string[]): EventSummary {
    const perHost = (key: string): Record<string, number> => {
      const v = this.stats?.[key];
      if (!isMap(v)) return {};
      return Object.fromEntries(Object.entries(v).filter((kv): kv is [string, number] => typeof kv[1] === 'number'));
    };
    const sum = (key: string): number => Object.values(perHost(key)).reduce((a, b) => a + b, 0);
    const failuresByHost = perHost('failures');
    const darkByHost = perHost('dark');
    const finished = this.stats !== undefined;
    // A rescued task's failure is reported like any other; the stats do not count it. A host's
    // play ends at its first unrescued failure, so its last `failures` events are the real ones.
    const counted = finished ? this.failures.filter((f, i) => this.isLastFailures(f, i, (failuresByHost[f.host] ?? 0) + (darkByHost[f.host] ?? 0))) : this.failures;
    return {
      finished,
      stats: { ok: sum('ok'), changed: sum('changed'), skipped: sum('skipped'), failures: sum('failures') + sum('dark') },
      failedTasks: counted.map((f) => ({ task: redactSecrets(f.task, secrets), message: bound(redactSecrets(f.message, secrets)) })),
      requeueAfterMs: this.requeueAfterMs,
      statusWrittenByRole: this.statusWritten,
      outputError: bound(redactSecrets(outputError(this.output), secrets)),
    };
  }

  private isLastFailures(f: Failure, index: number, keep: number): boolean {
    const later = this.failures.slice(index + 1).filter((g) => g.host === f.host).length;
    return later < keep;
  }
}

function taskName(data: Readonly<Record<string, unknown>>): string {
  const name = text(data['task'])?.trim() ?? '';
  return name !== '' ? name : (text(data['task_action']) ?? 'unnamed task');
}

function failureMessage(data: Readonly<Record<string, unknown>>): string {
  const res = data['res'];
  if (!isMap(res)) return 'the task failed without a message';
  const msg = text(res['msg'])?.trim();
  if (msg !== undefined && msg !== '') return msg.replace(/\s+/gu, ' ');
  // A failed command: its stderr says why.
  const stderr = text(res['stderr'])?.trim();
  if (stderr !== undefined && stderr !== '') return stderr.replace(/\s+/gu, ' ');
  return 'the task failed without a message';
}

/** `[ERROR]: …` with the `Origin: file:line` after it, from Ansible's own output. */
function outputError(lines: readonly string[]): string {
  const at = lines.findIndex((l) => l.startsWith('[ERROR]:'));
  if (at < 0) return lines.filter((l) => l.trim() !== '').slice(-1)[0]?.trim() ?? '';
  const message = (lines[at] ?? '').slice('[ERROR]:'.length).trim();
  const origin = lines[at + 1]?.startsWith('Origin: ') === true ? ` (${(lines[at + 1] ?? '').slice('Origin: '.length).trim()})` : '';
  return `${message}${origin}`;
}

function bound(s: string): string {
  return s.length <= MAX_TASK_MESSAGE_LENGTH ? s : `${s.slice(0, MAX_TASK_MESSAGE_LENGTH - 1)}…`;
}
