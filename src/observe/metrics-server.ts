/** `GET /metrics`: the Prometheus text exposition of the operator's private registry. */
import { notFound, pathOf, refuseNonGet, startHttpServer, type ListenAddress, type RunningServer } from './http-server.js';
import type { OperatorMetrics } from './metrics.js';

export async function startMetricsServer(address: ListenAddress, metrics: OperatorMetrics): Promise<RunningServer> {
  return startHttpServer('metrics server', address, async (req, res) => {
    if (refuseNonGet(req, res)) return;
    if (pathOf(req).path !== '/metrics') {
      notFound(res);
      return;
    }
    const { contentType, body } = await metrics.render();
    res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
}
