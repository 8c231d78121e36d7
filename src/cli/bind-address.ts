/** Listen addresses as Go's net.Listen takes them, for the metrics and probe servers' flags. */
import { isIP, isIPv6 } from 'node:net';

/** A listen address; `host` undefined means every interface (`:8080`). */
export interface BindAddress {
  readonly host: string | undefined;
  readonly port: number;
  /** As given on the command line, for logs. */
  readonly text: string;
}

export type BindAddressResult = { ok: true; address: BindAddress | undefined } | { ok: false; reason: string };

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$/u;

/** `host:port` as Go's net.Listen takes it (`:8080`, `127.0.0.1:0`, `[::1]:9090`); `0` disables. */
export function parseBindAddress(text: string): BindAddressResult {
  if (text === '0') return { ok: true, address: undefined };
  const bad = (why: string): BindAddressResult => ({
    ok: false,
    reason: `"${text}" is not a listen address (${why}); expected host:port such as :8080, 127.0.0.1:8080 or [::1]:8080, or 0 to disable`,
  });
  const colon = text.lastIndexOf(':');
  if (colon === -1) return bad('no port');
  let host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (host.startsWith('[')) {
    if (!host.endsWith(']')) return bad('unclosed "["');
    host = host.slice(1, -1);
    if (!isIPv6(host)) return bad(`"${host}" is not an IPv6 address`);
  } else if (host.includes(':')) {
    return bad('an IPv6 host must be in brackets, e.g. [::1]:8080');
  } else if (host !== '' && isIP(host) === 0 && !HOSTNAME.test(host)) {
    return bad(`"${host}" is not a host name or IP address`);
  }
  if (!/^\d{1,5}$/u.test(portText) || Number(portText) > 65535) return bad(`port "${portText}" is not a number from 0 to 65535`);
  return { ok: true, address: { host: host === '' ? undefined : host, port: Number(portText), text } };
}
