import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// Certificates for the mTLS test, made with openssl: a CA, the nodes' certificate (name
// localhost and 127.0.0.1; server and client use, as internode TLS presents it both
// ways), a client certificate of that CA, and one of another CA (the wrong one).

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

function ca(dir: string, name: string): void {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.pem`], dir);
}

function signed(dir: string, name: string, caName: string, ext: string): void {
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`], dir);
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.pem`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`], dir);
}

/** Writes ca.pem, server.pem/.key, client.pem/.key (the cluster's --tls folder) and wrong-client.pem/.key into dir. */
export function makeCerts(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  ca(dir, 'ca');
  ca(dir, 'other-ca');
  signed(dir, 'server', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  signed(dir, 'client', 'ca', 'extendedKeyUsage=clientAuth\n');
  signed(dir, 'wrong-client', 'other-ca', 'extendedKeyUsage=clientAuth\n');
}
