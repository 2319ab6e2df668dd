#!/usr/bin/env bash
# Certificates for trying kaas's TLS listeners (docs/security.md): a CA, a broker certificate
# for 127.0.0.1 and localhost, and a client certificate (principal User:CN=client,O=kaas) for mutual TLS. Never for
# production: the keys are unencrypted and the CA is made here.
#   scripts/dev-certs.sh DIR
# writes DIR/ca.pem (the CA certificate: clients' truststore, and the broker's for client
# certificates), DIR/broker.pem (the broker's certificate and key: ssl_keystore_location),
# DIR/client.pem (the client's certificate and key) and, separately, DIR/client-cert.pem and
# DIR/client-key.pem (for clients that want them apart, such as librdkafka).
set -euo pipefail
dir="${1:?usage: scripts/dev-certs.sh DIR}"
command -v openssl >/dev/null || { echo "openssl is needed" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
days=825

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/ca-key.pem" 2>/dev/null
openssl req -x509 -new -key "$tmp/ca-key.pem" -sha256 -days "$days" -subj "/CN=kaas dev CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.pem 2>/dev/null

issue() { # name subject extensions
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/$1-key.pem" 2>/dev/null
    openssl req -new -key "$tmp/$1-key.pem" -subj "$2" -out "$tmp/$1.csr" 2>/dev/null
    printf '%s\n' "$3" > "$tmp/$1.ext"
    openssl x509 -req -in "$tmp/$1.csr" -CA ca.pem -CAkey "$tmp/ca-key.pem" -CAcreateserial \
        -days "$days" -sha256 -extfile "$tmp/$1.ext" -out "$tmp/$1-cert.pem" 2>/dev/null
    cat "$tmp/$1-cert.pem" "$tmp/$1-key.pem" > "$1.pem"
}
issue broker "/O=kaas/CN=localhost" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
issue client "/O=kaas/CN=client" "extendedKeyUsage=clientAuth"
cp "$tmp/client-cert.pem" client-cert.pem
cp "$tmp/client-key.pem" client-key.pem
chmod 600 broker.pem client.pem client-key.pem
echo "wrote $dir/ca.pem, $dir/broker.pem, $dir/client.pem (and client-cert.pem, client-key.pem)"
