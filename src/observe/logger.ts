/**
 * Logs (pino): JSON by default, human-readable lines on request. Every reconcile's lines carry
 * controller, namespace, name and reconcileID.
 */
import pino, { type Logger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** `json`: one JSON object a line (for log collectors); `console`: readable lines for a terminal. */
export type LogFormat = 'json' | 'console';

/**
 * Where `format`'s lines go: stdout as JSON, or through the pretty printer; both written as they
 * are logged (pino buffers by default), so a SIGKILL or an OOM kill loses no line already logged:
 * the last ones before a crash are those its reader needs. One write(2) a line, as Go's loggers do.
 */
export async function logDestination(format: LogFormat, colorize = process.stdout.isTTY): Promise<pino.DestinationStream> {
  if (format === 'json') return pino.destination({ dest: 1, sync: true });
  return (await import('./pretty-logs.js')).prettyDestination(colorize);
}

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
