/**
 * Reads the API server's audit log as the run goes, one window at a time. The API server writes
 * it in batches (devcluster: at least once a second), so before a window is read the bench makes
 * a marker write of its own — a DELETE of a namespace that does not exist, answered 404 and
 * logged like any write — and reads until the marker is in the file: every write that completed
 * before the marker was sent is then in hand.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAuditLine, type AuditEntry } from './audit.js';
import type { BenchKube } from './kube.js';

const CHUNK = 1 << 20;

export class AuditLog {
  private offset = 0;
  private rest = '';
  /** Parsed entries not yet handed out (received after the last window's end). */
  private pending: AuditEntry[] = [];
  private markers = 0;

  constructor(readonly path: string, private readonly kube: BenchKube) {}

  /**
   * The writes received within [from, to] (ms since the epoch); `to` must be in the past. Entries
   * up to `to` are dropped afterwards: windows are taken in order.
   */
  async take(from: number, to: number, timeoutMs = 30_000): Promise<AuditEntry[]> {
    const marker = `chartpilot-bench-audit-marker-${String(process.pid)}-${String(++this.markers)}`;
    await this.kube.call('DELETE', `/api/v1/namespaces/${marker}`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const fresh = this.readNew();
      const seen = fresh.some((e) => e.resource === 'namespaces' && e.name === marker);
      this.pending.push(...fresh.filter((e) => !(e.resource === 'namespaces' && e.name.startsWith('chartpilot-bench-audit-marker-'))));
      if (seen) break;
      if (Date.now() > deadline) throw new Error(`the audit log ${this.path} did not show the bench's marker write within ${String(timeoutMs / 1000)} s`);
      await sleep(100);
    }
    const out = this.pending.filter((e) => e.received >= from && e.received <= to);
    this.pending = this.pending.filter((e) => e.received > to);
    return out;
  }

  private readNew(): AuditEntry[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return []; // not written yet
    }
    const out: AuditEntry[] = [];
    try {
      const buf = Buffer.alloc(CHUNK);
      for (;;) {
        const n = readSync(fd, buf, 0, CHUNK, this.offset);
        if (n === 0) break;
        this.offset += n;
        // The log is JSON (ASCII-safe escapes aside, UTF-8): cut only at newlines, so a multi-byte
        // character split between two reads is joined again first.
        const text = this.rest + buf.subarray(0, n).toString('latin1');
        const lines = text.split('\n');
        this.rest = lines.pop() ?? '';
        for (const l of lines) {
          const e = parseAuditLine(Buffer.from(l, 'latin1').toString('utf8'));
          if (e !== undefined) out.push(e);
        }
      }
    } finally {
      closeSync(fd);
    }
    return out;
  }
}
