/** The two ways a generator fails that are the user's to fix, each with its exit code. */

/** Bad input: flags, watches.yaml, a chart (exit 2). One line per problem. */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

/** The environment cannot do what was asked: helm does not run, a file cannot be written (exit 3). */
export class EnvironmentError extends Error {
  override readonly name = 'EnvironmentError';
}
