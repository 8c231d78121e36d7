/**
 * One watch connection: newline-delimited JSON events delivered as they arrive, an inactivity
 * deadline (the API server may go quiet without closing), and exactly one `onDone` at the end.
 */
import { fetch } from 'undici';
import { KubeApiError } from './errors.js';
import { buildUrl, requestHeaders, type Query, type Transport } from './http.js';
import { LineDecoder } from './lines.js';
import type { WatchEventType } from './types.js';
import { errorWithCause } from '../lib/errors.js';

export interface WatchOptions {
  accept?: string;
  /** No bytes for this long → the watch ends with a KubeApiError reason Timeout; default 5 min. */
  inactivityTimeoutMs?: number;
}

export interface WatchHandle {
  /** Ends the watch; `onDone(null)` follows unless it already ended. Idempotent. */
  abort(): void;
}

export type WatchEventHandler<T> = (type: WatchEventType, obj: T) => void;
export type WatchDoneHandler = (err: unknown) => void;

export const DEFAULT_WATCH_INACTIVITY_MS = 5 * 60_000;

/**
 * Opens a watch (`watch=true` is added to `query`); resolves once the server accepted it or it
 * failed, never rejects. See KubeClient.watch.
 */
export async function openWatch<T>(
  t: Transport,
  path: string,
  query: Query,
  onEvent: WatchEventHandler<T>,
  onDone: WatchDoneHandler,
  wo: WatchOptions = {},
): Promise<WatchHandle> {
  const watch = new WatchStream(t, path, onEvent, onDone, wo.inactivityTimeoutMs ?? DEFAULT_WATCH_INACTIVITY_MS);
  await watch.connect(buildUrl(t.server, path, { ...query, watch: true }), wo.accept);
  return { abort: () => { watch.abort(); } };
}

class WatchStream<T> {
  private readonly controller = new AbortController();
  private finished = false;
  /** By our caller. */
  private aborted = false;
  private timedOut = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly t: Transport,
    private readonly path: string,
    private readonly onEvent: WatchEventHandler<T>,
    private readonly onDone: WatchDoneHandler,
    private readonly inactivityMs: number,
  ) {}

  abort(): void {
    if (this.finished) return;
    this.aborted = true;
    this.controller.abort();
    this.finish(null);
  }

  /** Sends the request; once the server accepted it, events flow in the background. */
  async connect(url: URL, accept: string | undefined): Promise<void> {
    const started = performance.now();
    let body: AsyncIterable<Uint8Array>;
    try {
      this.armTimer(); // until headers arrive it bounds the connect, then it becomes the inactivity timeout
      const auth = await this.t.authenticate();
      const res = await fetch(url, { method: 'GET', headers: requestHeaders(this.t, auth, accept), dispatcher: auth.dispatcher, signal: this.controller.signal });
      this.t.onRequest?.('WATCH', this.path, res.status, performance.now() - started);
      if (res.status !== 200 || !res.body) {
        throw KubeApiError.fromResponse(res.status, await res.text(), { method: 'GET', path: this.path });
      }
      body = res.body;
    } catch (err) {
      this.finish(this.failure(err));
      return;
    }
    void this.pump(body);
  }

  private async pump(body: AsyncIterable<Uint8Array>): Promise<void> {
    const lines = new LineDecoder();
    try {
      this.armTimer();
      for await (const chunk of body) {
        this.armTimer();
        for (const line of lines.push(chunk)) {
          if (this.finished) return;
          this.deliver(line);
        }
      }
      for (const line of lines.end()) {
        if (this.finished) return;
        this.deliver(line);
      }
      this.finish(null);
    } catch (err) {
      this.finish(this.failure(err));
    }
  }

  private deliver(line: string): void {
    let ev: { type: WatchEventType; object: T };
    try {
      ev = JSON.parse(line) as { type: WatchEventType; object: T };
    } catch (cause) {
      // Ending the watch (and resuming from the last good resourceVersion) loses nothing;
      // skipping the line would silently drop an event.
      throw new KubeApiError(`watch ${this.path}: malformed event`, { status: 0, reason: 'InternalError', path: this.path, cause });
    }
    this.onEvent(ev.type, ev.object);
  }

  private finish(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.controller.abort();
    this.onDone(err);
  }

  private armTimer(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.inactivityMs);
    this.timer.unref();
  }

  /** What ended the watch, for onDone: null when our caller aborted it. */
  private failure(err: unknown): unknown {
    if (this.aborted) return null;
    if (err instanceof KubeApiError) return err;
    const { path } = this;
    if (this.timedOut) {
      return new KubeApiError(`watch ${path}: nothing received for ${this.inactivityMs} ms`, { status: 0, reason: 'Timeout', method: 'GET', path, cause: err });
    }
    return new KubeApiError(`watch ${path}: ${errorWithCause(err)}`, { status: 0, reason: 'Unavailable', method: 'GET', path, cause: err });
  }
}
