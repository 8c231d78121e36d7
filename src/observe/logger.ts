/**
 * Logs (pino): JSON by default, human-readable lines on request. Every reconcile's lines carry
 * controller, namespace, name and reconcileID.
 */
import pino, { type Logger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** `json`: one JSON object a line (for log collectors); `console`: readable lines for a terminal. */
export type LogFormat = 'json' | 'console';

/** Where `format`'s lines go: stdout as JSON (undefined: pino's own), or through the pretty printer. */
export async function logDestination(format: LogFormat, colorize = process.stdout.isTTY): Promise<pino.DestinationStream | undefined> {
  if (format === 'json') return undefined;
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
