import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { lineTime, type LogLine } from '../../integration/operator-log.js';
import { createLogger } from '../../../src/observe/logger.js';

/** One line as a pino logger writes it, parsed back. */
function lineOf(make: (dest: pino.DestinationStream) => pino.Logger): LogLine {
  let text = '';
  const log = make({ write: (s: string) => void (text += s) });
  log.warn({ attempt: 2 }, 'reconcile failed; will retry');
  return JSON.parse(text) as LogLine;
}

describe('lineTime (the time of a log line, for diagnostics that measure gaps)', () => {
  it("reads pino's default numeric time", () => {
    const before = Date.now();
    const at = lineTime(lineOf((d) => pino({}, d)));
    assert.ok(at >= before && at <= Date.now(), String(at));
  });

  it("reads the operator's ISO time", () => {
    const before = Date.now() - 1; // ISO time keeps milliseconds
    const at = lineTime(lineOf((d) => createLogger('info', d)));
    assert.ok(at >= before && at <= Date.now(), String(at));
  });

  it('is NaN only for a line without a time', () => {
    assert.ok(Number.isNaN(lineTime({ msg: 'x' })));
  });
});
