/** Answers of the proxy itself, as the Kubernetes `Status` objects clients know how to show. */
import type { ServerResponse } from 'node:http';

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  501: 'NotImplemented',
  502: 'InternalError',
  503: 'ServiceUnavailable',
};

/** A failure `Status` object, serialized. */
export function statusBody(code: number, message: string): Buffer {
  return Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: REASONS[code] ?? 'InternalError', code }), 'utf8');
}

export function sendStatus(res: ServerResponse, code: number, message: string): void {
  const body = statusBody(code, message);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}
