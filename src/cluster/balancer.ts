import net from 'node:net';

// The cluster's one client address, in front of every node's frontend: a TCP balancer
// (what a load balancer or a DNS name with several records is in production). Each
// client connection goes to the next frontend in turn; a frontend that refuses is
// skipped, so while one node is down new connections go to the others. TLS passes
// through untouched: the client checks the node's certificate end to end.

export function startBalancer(listenPort: number, backends: string[], host = '127.0.0.1'): Promise<net.Server> {
  let next = 0;
  const connectAny = (client: net.Socket, tried: number): void => {
    if (tried >= backends.length) {
      client.destroy();
      return;
    }
    const target = backends[next++ % backends.length]!;
    const i = target.lastIndexOf(':');
    const upstream = net.connect({ host: target.slice(0, i), port: Number(target.slice(i + 1)) });
    // An error before 'connect' is a refusal: try the next frontend.
    upstream.once('error', () => connectAny(client, tried + 1));
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
  };
  const server = net.createServer({ pauseOnConnect: true }, (client) => connectAny(client, 0));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, host, () => resolve(server));
  });
}
