/** Exit codes of the chartpilot command (documented in docs/operations/running.md). */
export const ExitCode = {
  ok: 0,
  /** An unexpected internal error. */
  internal: 1,
  /** Bad command line or bad watches.yaml: fix the input. */
  badConfig: 2,
  /** The environment is not ready: cluster unreachable, CRD missing, RBAC missing, helm missing. */
  environment: 3,
  /** `chartpilot adopt`: some release records were refused (each named, with why). */
  adoptRefused: 4,
} as const;
