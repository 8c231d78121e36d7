/** The kubeconfig a run's Ansible gets: the proxy on loopback, its certificate, and the run's token; nothing else. */
import { stringify } from 'yaml';

export interface RunKubeconfigInput {
  readonly port: number;
  /** The proxy's own certificate (PEM): the only authority this kubeconfig trusts. */
  readonly certificate: string;
  readonly token: string;
  /** The context's default namespace (the CR's); none for a cluster-scoped CR. */
  readonly namespace: string | undefined;
}

export function runKubeconfig(k: RunKubeconfigInput): string {
  const context: Record<string, string> = { cluster: 'chartpilot-proxy', user: 'chartpilot-run' };
  if (k.namespace !== undefined && k.namespace !== '') context.namespace = k.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'chartpilot-proxy',
        cluster: { server: `https://127.0.0.1:${k.port}`, 'certificate-authority-data': Buffer.from(k.certificate, 'utf8').toString('base64') },
      },
    ],
    users: [{ name: 'chartpilot-run', user: { token: k.token } }],
    contexts: [{ name: 'chartpilot-run', context }],
    'current-context': 'chartpilot-run',
  });
}
