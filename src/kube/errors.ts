/**
 * Typed failures of the Kubernetes API. Callers branch on `reason` (the API's own StatusReason
 * vocabulary) rather than parsing messages, and `message` stays the server's words so it can be
 * shown to users in conditions and events unchanged.
 */
import { STATUS_CODES } from 'node:http';
import type { KubeStatus } from './types.js';

/** Reasons used when the server sent no Status body (or the request never reached it). */
const reasonByStatus: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export interface KubeApiErrorInit {
  /** HTTP status; 0 when no response was received (network failure, timeout). */
  status: number;
  reason?: string;
  details?: unknown;
  method?: string;
  path?: string;
  cause?: unknown;
}

export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly status: number;
  /** metav1.StatusReason (NotFound, AlreadyExists, Conflict, Forbidden, Invalid, Expired, Gone, …), or Unavailable/Timeout for status 0. */
  readonly reason: string;
  readonly details?: unknown;
  readonly method?: string;
  readonly path?: string;

  constructor(message: string, init: KubeApiErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.reason = init.reason ?? reasonByStatus[init.status] ?? (init.status === 0 ? 'Unavailable' : 'Unknown');
    this.details = init.details;
    this.method = init.method;
    this.path = init.path;
  }

  /** Builds the error from an HTTP status and the (possibly non-JSON) response body. */
  static fromResponse(status: number, body: string, where?: { method?: string; path?: string }): KubeApiError {
    const parsed = parseStatus(body);
    if (parsed) return KubeApiError.fromStatus(parsed, status, where);
    const text = body.trim().slice(0, 500);
    return new KubeApiError(text || `${status} ${STATUS_CODES[status] ?? 'error'}`, { status, ...where });
  }

  /** Builds the error from a metav1.Status (HTTP error body or watch ERROR event). */
  static fromStatus(st: KubeStatus, httpStatus?: number, where?: { method?: string; path?: string }): KubeApiError {
    const status = st.code ?? httpStatus ?? 500;
    return new KubeApiError(st.message ?? `${status} ${STATUS_CODES[status] ?? 'error'}`, {
      status,
      reason: st.reason || undefined,
      details: st.details,
      ...where,
    });
  }
}

function parseStatus(body: string): KubeStatus | undefined {
  if (!body.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(body) as unknown;
    if (v && typeof v === 'object' && (v as KubeStatus).kind === 'Status') return v;
  } catch {
    // not JSON: the caller falls back to the raw text
  }
  return undefined;
}

function statusOf(err: unknown): number | undefined {
  return err instanceof KubeApiError ? err.status : undefined;
}

export const isNotFound = (err: unknown): boolean => statusOf(err) === 404;
export const isConflict = (err: unknown): boolean => statusOf(err) === 409 && (err as KubeApiError).reason === 'Conflict';
export const isAlreadyExists = (err: unknown): boolean => statusOf(err) === 409 && (err as KubeApiError).reason === 'AlreadyExists';
export const isForbidden = (err: unknown): boolean => statusOf(err) === 403;
/** 410: a resourceVersion or continue token the server no longer has (reason Expired or Gone). */
export const isGone = (err: unknown): boolean => statusOf(err) === 410;
export const isInvalid = (err: unknown): boolean => statusOf(err) === 422;
/** Worth retrying as is: no response, throttling, or a server-side hiccup. */
export const isTransient = (err: unknown): boolean => {
  const s = statusOf(err);
  return s === 0 || s === 429 || s === 500 || s === 502 || s === 503 || s === 504;
};
