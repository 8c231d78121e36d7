/** A free TCP port on loopback, for a local server started next (registry, Prometheus, OLM's operators, test pods). */
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        if (port === 0) reject(new Error('no TCP port was given on 127.0.0.1'));
        else resolve(port);
      });
    });
  });
}
