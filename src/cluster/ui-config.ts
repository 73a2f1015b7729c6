import type { ClusterTlsFiles } from './state';

// The Temporal UI server's config (github.com/temporalio/ui-server), rendered from our
// template: the UI talks to the cluster through the balancer, with the client
// certificate when the frontend requires mTLS.
export function renderUiConfig(o: { grpcAddress: string; port: number; tls?: ClusterTlsFiles }): string {
  const tls = o.tls
    ? `tls:
  caFile: "${o.tls.caFile}"
  certFile: "${o.tls.clientCertFile}"
  keyFile: "${o.tls.clientKeyFile}"
  serverName: "${o.tls.serverName}"
  enableHostVerification: true
`
    : '';
  return `# Rendered by turnstile cluster (src/cluster/ui-config.ts).
temporalGrpcAddress: "${o.grpcAddress}"
host: "127.0.0.1"
port: ${o.port}
enableUi: true
defaultNamespace: default
refreshInterval: 1m
cors:
  cookieInsecure: true
  allowOrigins: []
${tls}`;
}
