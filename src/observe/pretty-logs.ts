/**
 * Human-readable logs (`--log-format console`, operator-sdk's `--zap-encoder=console` and
 * `--zap-devel`): pino's own pretty printer, pino-pretty, as a synchronous stream so a line is out
 * before the process exits. Loaded through this module of ours only when asked for: pino-pretty
 * is CommonJS (see x509.ts for why the bundle needs an ES module in between).
 */
import pretty from 'pino-pretty';
import type { DestinationStream } from 'pino';

export function prettyDestination(colorize: boolean): DestinationStream {
  return pretty({ colorize, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
