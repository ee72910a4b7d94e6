#!/bin/sh
# SPDX-License-Identifier: MIT
# tls_certs.sh DIR - the certificates of the fleet store's TLS tests, made
# by the test itself with the openssl command (P-256 keys, valid for two
# days from now), into DIR:
#   ca.crt, ca.key            the test's CA
#   other-ca.crt              another CA, which signed none of these
#   server.crt, server.key    the server: 127.0.0.1 and localhost, by ca
#   expired.crt, expired.key  the same names, by ca, expired yesterday
#   elsewhere.crt, .key       by ca, for redis.elsewhere.example only
#   client.crt, client.key    a client certificate, by ca
# Exit 0, or non-zero with openssl's words on standard error.
set -eu
dir=${1:?usage: tls_certs.sh DIR}
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2> /dev/null; }

# A certificate $1.crt for key $1.key, subject CN $2, signed by CA $3, valid
# for $4 days from now (-1: it expired yesterday), with extensions $5.
signed() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "$5" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial \
    -days "$4" -extfile "$1.ext" -out "$1.crt" 2> /dev/null
  rm -f "$1.csr" "$1.ext"
}

for ca in ca other-ca; do
  key "$ca.key"
  openssl req -x509 -new -key "$ca.key" -subj "/CN=breaker test $ca" -days 2 \
    -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign \
    -out "$ca.crt"
done
names='subjectAltName=IP:127.0.0.1,DNS:localhost'
signed server localhost ca 2 "$names"
signed expired localhost ca -1 "$names"
signed elsewhere redis.elsewhere.example ca 2 'subjectAltName=DNS:redis.elsewhere.example'
signed client breaker-client ca 2 'extendedKeyUsage=clientAuth'
rm -f ca.srl
