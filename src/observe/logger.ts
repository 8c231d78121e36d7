/** JSON logs (pino). Every reconcile's lines carry controller, namespace, name and reconcileID. */
import pino, { type Logger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Defence in depth: values never reach log calls, but if a field with these names ever does,
      // it is censored rather than written out.
      redact: { paths: ['values', '*.values', 'spec', '*.spec', 'data', '*.data', 'stringData'], censor: '[redacted]' },
    },
    destination,
  );
}
