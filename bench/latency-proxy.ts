import net from 'node:net';

// A TCP proxy that holds every chunk a client sends for `delayMs` before passing it on:
// each request to a local SeaweedFS then takes about as long as a round trip to a
// remote object store (tens of ms), where on localhost it takes ~1 ms. Bench only.

export interface LatencyProxy {
  url: string;
  /** Connections made and bytes clients sent through the proxy so far: that the delay was really in the way. */
  stats(): { connections: number; bytes: number };
  close(): Promise<void>;
}

export async function startLatencyProxy(target: string, delayMs: number): Promise<LatencyProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let bytes = 0;
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    // Chunks keep their order: every one waits the same time.
    client.on('data', (chunk: Buffer) => {
      bytes += chunk.byteLength;
      setTimeout(() => upstream.write(chunk), delayMs);
    });
    client.on('end', () => setTimeout(() => upstream.end(), delayMs));
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    stats: () => ({ connections, bytes }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
