/**
 * Kubernetes Events on custom resources. Repeats of the same event within a window bump the count
 * of the existing Event instead of creating new ones, so a failure loop does not flood etcd.
 * Writing an event is fire-and-forget: a missing event must never fail a reconcile.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { CoreResources, createObject, mergePatchObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { EventSink, EventType } from '../core/ports.js';
import type { CustomResource } from '../core/model.js';

const COMPONENT = 'chartpilot';
/** Events API validates messages to 1 KiB on events.k8s.io; keep core Events within that too. */
const MAX_MESSAGE = 1024;
const AGGREGATE_WINDOW_MS = 10 * 60_000;
const MAX_TRACKED = 4096;

interface Recorded {
  readonly eventName: string;
  readonly namespace: string;
  count: number;
  lastAt: number;
}

export interface EventRecorderOptions {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly now?: () => number;
}

export function truncateMessage(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}

export class EventRecorder implements EventSink {
  private readonly recent = new Map<string, Recorded>();
  private readonly instance = hostname();
  private readonly now: () => number;
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly opts: EventRecorderOptions) {
    this.now = opts.now ?? Date.now;
  }

  emit(cr: CustomResource, type: EventType, reason: string, message: string): void {
    const p = this.write(cr, type, reason, truncateMessage(message)).catch((err: unknown) => {
      this.opts.log.warn({ err, reason, namespace: cr.metadata.namespace, name: cr.metadata.name }, 'could not write event');
    });
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Waits for events in flight (used on shutdown and in tests). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  private async write(cr: CustomResource, type: EventType, reason: string, message: string): Promise<void> {
    const namespace = cr.metadata.namespace ?? 'default';
    const key = `${cr.metadata.uid ?? `${namespace}/${cr.metadata.name}`}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = this.now();
    const stamp = new Date(now).toISOString();
    const seen = this.recent.get(key);
    if (seen !== undefined && now - seen.lastAt < AGGREGATE_WINDOW_MS) {
      seen.count += 1;
      seen.lastAt = now;
      await mergePatchObject(this.opts.client, { resource: CoreResources.event, namespace: seen.namespace, name: seen.eventName }, { count: seen.count, lastTimestamp: stamp });
      return;
    }
    const eventName = `${cr.metadata.name}.${now.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
    await createObject(this.opts.client, CoreResources.event, namespace, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: eventName, namespace },
      involvedObject: {
        apiVersion: cr.apiVersion,
        kind: cr.kind,
        name: cr.metadata.name,
        namespace,
        uid: cr.metadata.uid,
        resourceVersion: cr.metadata.resourceVersion,
      },
      type,
      reason,
      message,
      count: 1,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      source: { component: COMPONENT },
      reportingComponent: COMPONENT,
      reportingInstance: this.instance,
    });
    if (this.recent.size >= MAX_TRACKED) {
      const oldest = this.recent.keys().next();
      if (oldest.done !== true) this.recent.delete(oldest.value);
    }
    this.recent.set(key, { eventName, namespace, count: 1, lastAt: now });
  }
}
