/**
 * `chartpilot generate argocd`: an Argo CD resource health check per kind. Argo CD calls a custom
 * resource it has no check for Healthy whatever its status says, so an Application holding a CR
 * whose install failed shows green. The check reads the summary the operator writes
 * (`status.chartpilot.summary`, core/summary.ts) — one verdict over all conditions, the same
 * for chart and Ansible kinds — and waits while the operator has not yet acted on the CR's
 * current generation. Pure.
 *
 * Argo CD runs a check from argocd-cm without Lua's string, math or os libraries unless told
 * otherwise, so the script uses none of them.
 */
import { stringify } from 'yaml';
import { CHARTPILOT_STATUS_KEY, SummaryStates, type SummaryState } from '../core/summary.js';

/** Argo CD's health statuses (gitops-engine pkg/health) a chartpilot CR can be in. */
export type ArgoHealth = 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended' | 'Unknown';

/**
 * Every summary state's health. Degraded: nothing changes until someone acts, or what runs is not
 * what the CR asks for (a failed upgrade keeps the last release, a held chart change, drift left
 * in place). Typed over every state, so a new state cannot be left out.
 */
export const HEALTH_OF_STATE: Readonly<Record<SummaryState, ArgoHealth>> = {
  [SummaryStates.ready]: 'Healthy',
  [SummaryStates.deployed]: 'Healthy',
  [SummaryStates.succeeded]: 'Healthy',
  [SummaryStates.progressing]: 'Progressing',
  [SummaryStates.running]: 'Progressing',
  [SummaryStates.uninstalling]: 'Progressing',
  [SummaryStates.paused]: 'Suspended',
  [SummaryStates.failed]: 'Degraded',
  [SummaryStates.stalled]: 'Degraded',
  [SummaryStates.foreign]: 'Degraded',
  [SummaryStates.held]: 'Degraded',
  [SummaryStates.drifted]: 'Degraded',
  [SummaryStates.unknown]: 'Progressing',
};

/** A Lua string literal: JSON's escapes are Lua's for what these texts hold (ASCII, no control characters). */
function luaString(s: string): string {
  if (!/^[\x20-\x7e]*$/u.test(s)) throw new Error(`not a plain ASCII text for the Lua script: ${JSON.stringify(s)}`);
  return JSON.stringify(s);
}

/** The health check, the same script for every chartpilot kind. */
export function healthLua(version: string): string {
  const states = (Object.entries(HEALTH_OF_STATE) as [SummaryState, ArgoHealth][])
    .map(([state, health]) => `  [${luaString(state)}] = ${luaString(health)},`)
    .join('\n');
  return `-- chartpilot ${version}: the health of a chartpilot custom resource, from the verdict the
-- operator writes in status.${CHARTPILOT_STATUS_KEY}.summary (state, reason, message).
local hs = { status = "Progressing", message = "waiting for chartpilot to report on this resource" }
local health = {
${states}
}
-- Fields of the wrong type (a CRD without a status subresource lets anyone write status) read as absent.
local function text(v)
  if type(v) == "string" then return v end
  return ""
end
local function field(t, key)
  if type(t) == "table" then return t[key] end
  return nil
end
local status = field(obj, "status")
if type(status) ~= "table" then
  return hs
end
local generation = field(field(obj, "metadata"), "generation")
local observed = status.observedGeneration
-- No generation observed yet: the operator has announced its first action, not reported on one.
if type(generation) == "number" and type(observed) ~= "number" then
  return hs
end
if type(generation) == "number" and type(observed) == "number" and observed < generation then
  hs.message = "chartpilot has not acted on generation " .. generation .. " yet (observed " .. observed .. ")"
  return hs
end
local summary = field(field(status, "${CHARTPILOT_STATUS_KEY}"), "summary")
local state = text(field(summary, "state"))
if state == "" then
  return hs
end
hs.status = health[state] or "Unknown"
local reason = text(field(summary, "reason"))
local message = text(field(summary, "message"))
if reason ~= "" then
  hs.message = state .. " (" .. reason .. "): " .. message
else
  hs.message = state .. ": " .. message
end
return hs
`;
}

/** argocd-cm's key for a kind's health check: `resource.customizations.health.<group>_<kind>`. */
export function healthKey(kind: { readonly group: string; readonly kind: string }): string {
  return `resource.customizations.health.${kind.group === '' ? '' : `${kind.group}_`}${kind.kind}`;
}

/**
 * A patch of argocd-cm (namespace `argocdNamespace`) with the check for each kind, to merge into
 * the ConfigMap Argo CD runs with (kubectl patch --patch-file, or a Kustomize patch).
 */
export function argocdConfigMapYaml(kinds: readonly { readonly group: string; readonly kind: string }[], version: string, argocdNamespace: string): string {
  const script = healthLua(version);
  const data: Record<string, string> = {};
  for (const k of kinds) data[healthKey(k)] = script;
  const doc = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cm', namespace: argocdNamespace, labels: { 'app.kubernetes.io/name': 'argocd-cm', 'app.kubernetes.io/part-of': 'argocd' } },
    data,
  };
  return `# Argo CD health checks for chartpilot ${version}'s kinds: merge into argocd-cm, e.g.\n#   kubectl -n ${argocdNamespace} patch configmap argocd-cm --type merge --patch-file <this file>\n${stringify(doc, { lineWidth: 0 })}`;
}
