/** ansible-operator's condition types and reasons (and chartpilot's own beside them), and the condition's shape. */
import type { Condition } from '../../core/model.js';

/** ansible-operator's condition types, reasons and messages (internal/ansible/controller/status). */
export const AnsibleConditions = {
  running: 'Running',
  successful: 'Successful',
  failure: 'Failure',
  /** chartpilot's own: the objects the runs created are up (as for chart kinds). */
  ready: 'Ready',
} as const;

export const AnsibleReasons = {
  running: 'Running',
  successful: 'Successful',
  failed: 'Failed',
  /** chartpilot: the run was killed after --ansible-run-timeout. */
  timeout: 'RunTimeout',
  /** chartpilot: ansible-runner could not start or the role could not be read. */
  runError: 'RunError',
  /** chartpilot: a write of the run was refused (confinement or the tenant's RBAC). */
  forbidden: 'Forbidden',
  /** chartpilot: the operator stopped during the run; it runs again when the operator is back. */
  interrupted: 'Interrupted',
  /** chartpilot: the CR cannot be reconciled as it is (an annotation). */
  invalid: 'InvalidAnnotation',
  serviceAccountNotFound: 'ServiceAccountNotFound',
} as const;

/** ansible-operator's `ansibleResult` on the Running (success) or Failure condition. */
export interface AnsibleResult {
  readonly ok: number;
  readonly changed: number;
  readonly skipped: number;
  readonly failures: number;
  /** When the run ended, as ansible-operator writes it (`2006-01-02T15:04:05.99999999+00:00`). */
  readonly completion: string;
}

/** ansible-operator's condition: metav1's (observedGeneration is chartpilot's: kstatus reads it) with the last run's result. */
export interface AnsibleCondition extends Condition {
  readonly ansibleResult?: AnsibleResult;
}
