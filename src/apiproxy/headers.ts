/** Which headers cross the proxy, each way. */
import type { IncomingMessage } from 'node:http';

// x-remote-*: the API server's front-proxy identity headers, honoured from a connection with a
// requestheader client certificate; an operator running with one would otherwise let a run name any user.
const NOT_PASSED = /^(?:authorization|impersonate-.*|x-remote-.*|host|content-length|proxy-.*)$/iu;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'trailer', 'te']);

/**
 * The client's headers to pass on: never its credentials, impersonation or front-proxy identity (the run's identity is
 * the proxy's to set), nor hop-by-hop ones; writes ask for an uncompressed answer, which the proxy reads.
 */
export function clientHeaders(req: IncomingMessage, keepEncoding: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || NOT_PASSED.test(name) || HOP_BY_HOP.has(name) || (!keepEncoding && name === 'accept-encoding')) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function responseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())) out[name] = value;
  }
  return out;
}

