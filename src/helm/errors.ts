/**
 * Turns helm's stderr into a typed HelmError. The patterns were taken from real helm 4.1.4
 * output (see test/fixtures/helm/stderr/); helm 3 phrasings are matched where they differ.
 */
import { describeForbidden, parseForbidden } from '../lib/forbidden.js';
import { REDACTED, redactSecrets } from '../lib/redact.js';
import { HelmError, type HelmErrorKind } from './types.js';

/** Longest message we keep; helm can print whole manifests in some errors. */
export const MAX_MESSAGE_LENGTH = 1000;

const RULES: readonly (readonly [HelmErrorKind, RegExp])[] = [
  // Order matters: a lock or ownership conflict can be wrapped in an otherwise generic message.
  ['locked', /another operation \(install\/upgrade\/rollback\) is in progress/i],
  // RBAC refused a request (also one made by a lookup while rendering, which would read as 'render').
  ['forbidden', /is forbidden: User "[^"]*" cannot /],
  [
    'conflict',
    /invalid ownership metadata|exists and cannot be imported into the current release|Apply failed with \d+ conflicts?|conflicts? with "[^"]*"/i,
  ],
  ['not-found', /release: not found|release not found/i],
  [
    'render',
    new RegExp(
      [
        String.raw`parse error at \(`, // template syntax
        String.raw`execution error at \(`, // fail / required
        String.raw`error calling \w+:`,
        String.raw`executing "[^"]*" at <`, // template execute (helm 4 multi-line form)
        String.raw`^template: `, // helm 3 template errors
        'YAML parse error',
        'MalformedYAMLError',
        'error converting YAML to JSON',
        String.raw`values don't meet the specifications of the schema`,
        'unable to build kubernetes objects',
        'error while running post render',
        'error merging manifests',
        String.raw`\w+ "[^"]*" is invalid: `, // API validation of a rendered object
        'failed to create typed patch object', // server-side apply: wrong field type
      ].join('|'),
      'im',
    ),
  ],
  // helm's own --timeout expiring (helm 4: "context deadline exceeded"; helm 3: "timed out
  // waiting for the condition"); our kill is reported by exec.ts without looking at stderr.
  ['timeout', /timed out waiting for the condition|context deadline exceeded/i],
];

/** Helm's hint after template errors; noise in a status condition. */
const HINT = /^Use --debug flag to render out invalid YAML$/;

/**
 * The user-facing part of helm's stderr: from the first `Error:` line to the end, without the
 * prefix and the debug hint; falls back to the last lines when there is no `Error:` line.
 */
export function extractMessage(stderr: string): string {
  const lines = stderr.split(/\r?\n/).map((l) => l.trimEnd());
  const start = lines.findIndex((l) => l.startsWith('Error: '));
  const picked = (start >= 0 ? lines.slice(start) : lines.slice(-5))
    .filter((l) => l.trim() !== '' && !HINT.test(l.trim()));
  if (picked.length === 0) return '';
  if (start >= 0 && picked[0] !== undefined) picked[0] = picked[0].slice('Error: '.length);
  // Not truncated here: redaction must see the whole text, or a cut secret would survive.
  return picked.join('\n').trim();
}

export function classifyMessage(message: string): HelmErrorKind {
  for (const [kind, re] of RULES) if (re.test(message)) return kind;
  return 'failed';
}

/**
 * Builds the HelmError for a failed helm call. `secrets` are strings that must not appear in the
 * message (the values' string leaves): helm echoes values in some errors, e.g. the schema error
 * `at '/password': 'hunter2' does not match pattern '^a'`.
 */
export function helmErrorFromStderr(stderr: string, action: string, secrets: readonly string[] = []): HelmError {
  const message = extractMessage(stderr);
  // Classified before redaction, which could hide the words the rules look for.
  const kind = classifyMessage(message);
  if (kind === 'forbidden') {
    // Who may not do what where, without helm's chain of contexts (which, for a lookup inside
    // `tpl`, quotes the template text: a value). Only the object's name can come from values
    // (identity, verb, resource and namespace are the API server's); a name that is one is left
    // out rather than shown as <redacted>.
    const refused = parseForbidden(message);
    if (refused !== undefined) {
      const name = refused.name !== undefined && redact(refused.name, secrets) !== refused.name ? undefined : refused.name;
      return new HelmError(kind, describeForbidden({ ...refused, name }), action);
    }
  }
  return new HelmError(kind, message === '' ? `helm ${action} failed without an error message` : redact(message, secrets), action);
}

// The generic part lives in lib/ (Ansible task errors are redacted the same way); re-exported for helm's callers.
export { REDACTED, spellingsOf, stringLeaves } from '../lib/redact.js';

export function redact(message: string, secrets: readonly string[]): string {
  let out = redactSecrets(message, secrets);
  // jsonschema quotes the offending value in pattern/const/format errors; drop it even when it
  // was too short (or not a leaf string, e.g. a number) to be redacted above.
  out = out.replace(/'(?:[^'\\]|\\.)*' does not match (pattern|format)/g, `${REDACTED} does not match $1`);
  return truncate(boundFailMessages(out));
}

/** The longest part of a chart's `fail`/`required` message kept (it may carry values in forms not redacted above). */
export const MAX_FAIL_MESSAGE_LENGTH = 200;

/**
 * A chart's own error text (`execution error at (<template>): <text>`) is kept only up to
 * MAX_FAIL_MESSAGE_LENGTH per line: enough for "replicaCount must be set", not for a dump of values.
 */
function boundFailMessages(message: string): string {
  return message
    .split('\n')
    .map((line) => {
      const m = /^(.*?execution error at \([^)]*\): )(.*)$/u.exec(line);
      if (m?.[2] === undefined || m[2].length <= MAX_FAIL_MESSAGE_LENGTH) return line;
      return `${m[1] ?? ''}${m[2].slice(0, MAX_FAIL_MESSAGE_LENGTH)}… (cut: the chart's message is longer)`;
    })
    .join('\n');
}

function truncate(s: string): string {
  return s.length <= MAX_MESSAGE_LENGTH ? s : `${s.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
