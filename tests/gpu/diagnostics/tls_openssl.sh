#!/usr/bin/env bash
# tls_openssl.sh: what OpenSSL itself moves on this host, with no scuda code:
# the cipher alone (`openssl speed`), the TLS 1.3 record layer on one thread
# (tls_record_layer.cc), and 1 to 16 loopback streams, plain and TLS
# (tls_streams.cc). Figures in docs/bench/tls.md. Run from the repo root:
#   bash tests/gpu/diagnostics/tls_openssl.sh
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/scuda-tls-openssl.XXXXXX)
trap 'rm -rf "$work"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
g++ -O2 -std=c++20 -o "$work/tls_streams" "$here/tls_streams.cc" -lssl -lcrypto -lpthread
g++ -O2 -std=c++20 -o "$work/tls_record_layer" "$here/tls_record_layer.cc" -lssl -lcrypto
openssl version
openssl speed -elapsed -seconds 2 -evp aes-256-gcm 2>/dev/null | tail -1
"$work/tls_record_layer" 4096 "$work"
for k in 1 4 8 16; do
  for mode in plain tls tlsbuf; do "$work/tls_streams" "$mode" "$k" 2048 "$work"; done
done
