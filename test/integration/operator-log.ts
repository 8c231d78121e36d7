// Reading a running operator's JSON log: its lines, whether a message was logged, waiting for one.
import type { RunningOperator } from './operator.js';
import { explained, waitFor } from './wait.js';

export interface LogLine {
  msg?: string;
  [field: string]: unknown;
}

/** The JSON lines logged so far (a line still being written is left out). */
export function logLines(op: RunningOperator): LogLine[] {
  const lines: LogLine[] = [];
  for (const l of op.logs().split('\n')) {
    if (!l.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(l) as LogLine);
    } catch {
      // Not complete yet.
    }
  }
  return lines;
}

/**
 * When a line was logged, in epoch ms: pino writes `time` as a number unless told otherwise, and
 * the operator as an ISO string; `Date.parse` of the number would be NaN. NaN only when absent.
 */
export function lineTime(line: LogLine): number {
  const time = line.time;
  if (typeof time === 'number') return time;
  return typeof time === 'string' ? Date.parse(time) : Number.NaN;
}

export function logged(op: RunningOperator, msg: string): boolean {
  return logLines(op).some((l) => l.msg === msg);
}

/** The last lines of the log, for a failure message. */
export function logTail(op: RunningOperator, lines = 40): string {
  return `operator log tail:\n${op.logs().split('\n').slice(-lines).join('\n')}`;
}

/** Waits until `op` has logged `msg` and returns that line; on timeout the error carries the log tail. */
export async function waitForLog(op: RunningOperator, msg: string, timeoutMs = 60_000): Promise<LogLine> {
  return explained(
    waitFor(`log "${msg}"`, () => Promise.resolve(logLines(op).find((l) => l.msg === msg)), { timeoutMs }),
    () => logTail(op),
  );
}
