// Scraping the operator's /metrics as Prometheus does, and reading the text exposition format.
import { request } from 'node:https';

/** Sum of every sample of `name` whose labels include all of `labels`; undefined when there is none. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = m[3] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) sum = (sum ?? 0) + Number(m[4]);
  }
  return sum;
}

export interface Scrape {
  readonly status: number;
  readonly body: string;
}

/**
 * GET https://<host>:<port>/metrics with `token` as the bearer token (none if undefined). The
 * certificate is not verified, as with a ServiceMonitor's `insecureSkipVerify` for the
 * self-signed certificate of --metrics-secure.
 */
export function scrapeHttps(port: number, token?: string, host = '127.0.0.1'): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    const req = request({ host, port, path: '/metrics', headers, rejectUnauthorized: false, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}
