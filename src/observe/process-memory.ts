/** A process's resident memory from /proc (Linux, where chartpilot runs); 0 when it cannot be read. */
import { readFileSync } from 'node:fs';

/** VmRSS of `/proc/<pid>/status` in bytes; 0 for a process that is gone or a system without /proc. */
export function residentBytesOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/mu.exec(readFileSync(`/proc/${String(pid)}/status`, 'utf8'));
    return m?.[1] === undefined ? 0 : Number(m[1]) * 1024;
  } catch {
    return 0;
  }
}
