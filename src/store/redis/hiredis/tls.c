/* SPDX-License-Identifier: MIT */
/*
 * tls.c - TLS for the hiredis transport (net.h, breaker_redis_config.tls):
 * hiredis's hiredis_ssl (hiredis 1.0 and later) over OpenSSL. The
 * transport makes one SSL_CTX at open (the CAs, the client's certificate
 * and key read then, so that a bad file is an error of open, naming its
 * field) and, for each connection, an SSL of its own that checks the
 * server's name (OpenSSL's SSL_set1_host, or the IP address: hiredis sends
 * SNI but checks no name) and hands it to redisInitiateSSL(), which runs
 * the handshake on the connected socket (within its socket timeout) and
 * owns the SSL from then on.
 *
 * What failed, said so that the client can tell (cause.c): a handshake
 * refused (a certificate not trusted, expired, for another name, one the
 * server asks of the client; a server that does not speak TLS) is "TLS:
 * ...", a configuration error; one that timed out or was cut is "TLS
 * handshake: ...", an outage.
 *
 * Reading: net.c polls the socket and then reads with hiredis, 16 KB at a
 * time, which is the most a TLS record holds: each read takes whole
 * records, so OpenSSL never keeps decrypted bytes that poll() cannot see.
 *
 * Built without TLS (BREAKER_REDIS_HAVE_TLS undefined: hiredis older than
 * 1.0, or hiredis_ssl not found), every TLS field is refused at open.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/redis/hiredis/net.h"

#include "common/message.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A TLS field set without tls, and the pairs that go together. */
static int check_fields(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    const char *set = cfg->tls_ca_file != NULL       ? "tls_ca_file"
                      : cfg->tls_ca_dir != NULL      ? "tls_ca_dir"
                      : cfg->tls_cert_file != NULL   ? "tls_cert_file"
                      : cfg->tls_key_file != NULL    ? "tls_key_file"
                      : cfg->tls_server_name != NULL ? "tls_server_name"
                      : cfg->tls_no_verify           ? "tls_no_verify"
                                                     : NULL;
    if (!cfg->tls && set != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "%s: set, but tls is 0 (set tls to 1 for TLS)", set);
    if (!cfg->tls) return BREAKER_OK;
    if (cfg->unix_path != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "tls: Redis speaks TLS on TCP only (unix_path must be NULL)");
    if ((cfg->tls_cert_file != NULL) != (cfg->tls_key_file != NULL))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: set without %s",
                             cfg->tls_cert_file != NULL ? "tls_cert_file" : "tls_key_file",
                             cfg->tls_cert_file != NULL ? "tls_key_file" : "tls_cert_file");
    if (cfg->tls_server_name != NULL &&
        (cfg->tls_server_name[0] == '\0' || strlen(cfg->tls_server_name) > 253))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "tls_server_name: 1 to 253 bytes (NULL: the address connected to)");
    return BREAKER_OK;
}

#ifdef BREAKER_REDIS_HAVE_TLS

#include <hiredis/hiredis_ssl.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <sys/stat.h>

struct net_tls {
    SSL_CTX *ctx;
    char *server_name; /* NULL: each node's address */
    int verify;
};

/* The last handshake of this thread was asked for a client certificate,
 * and the handle has none. With TLS 1.3 a server that requires one still
 * completes the handshake, then closes the connection at the first
 * command, and its alert may be lost in the reset: this says why. A
 * thread's connect runs its handshake and its first commands in a row
 * (breaker__redis_connect()), so this thread's last handshake is that
 * connection's. */
static _Thread_local int asked_for_certificate;

/* OpenSSL calls this when the server asks for a certificate and the
 * context has none: none is sent (a server whose clients' certificates
 * are optional goes on). */
static int no_client_certificate(SSL *ssl, X509 **x509, EVP_PKEY **pkey) {
    (void)ssl;
    (void)x509;
    (void)pkey;
    asked_for_certificate = 1;
    return 0;
}

int breaker__redis_tls_check(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    return check_fields(cfg, msg, msg_len);
}

static pthread_once_t openssl_once = PTHREAD_ONCE_INIT;
static void openssl_init(void) { (void)redisInitOpenSSL(); }

/* `field`'s file `path` could not be used: why, in words. */
static int file_error(const char *field, const char *path, char *msg, size_t msg_len) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: %s: %s", field, path,
                             strerror(errno));
    fclose(f);
    unsigned long e = ERR_peek_last_error();
    return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: %s: %s", field, path,
                         e != 0 ? ERR_reason_error_string(e) : "not usable");
}

/* @return 1 when `path` is a directory; else 0, errno set when it cannot
 * be looked at (0 when it is something else). OpenSSL reads a CA
 * directory only when it verifies a certificate: checked here, so that a
 * wrong path is an error of open rather than of every handshake. */
static int is_dir(const char *path) {
    struct stat st;
    errno = 0;
    if (stat(path, &st) != 0) return 0;
    return S_ISDIR(st.st_mode);
}

struct net_tls *breaker__redis_tls_create(const breaker_redis_config *cfg, int *rc, char *msg,
                                          size_t msg_len) {
    pthread_once(&openssl_once, openssl_init);
    struct net_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) goto nomem;
    tls->verify = !cfg->tls_no_verify;
    if (cfg->tls_server_name != NULL && (tls->server_name = strdup(cfg->tls_server_name)) == NULL)
        goto nomem;
    ERR_clear_error();
    tls->ctx = SSL_CTX_new(TLS_client_method());
    if (tls->ctx == NULL) goto nomem;
    (void)SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(tls->ctx, tls->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_client_cert_cb(tls->ctx, no_client_certificate);
    *rc = BREAKER_OK;
    if (cfg->tls_ca_file != NULL &&
        SSL_CTX_load_verify_locations(tls->ctx, cfg->tls_ca_file, NULL) != 1)
        *rc = file_error("tls_ca_file", cfg->tls_ca_file, msg, msg_len);
    else if (cfg->tls_ca_dir != NULL && !is_dir(cfg->tls_ca_dir))
        *rc = breaker__fail(BREAKER_EINVAL, msg, msg_len, "tls_ca_dir: %s: %s", cfg->tls_ca_dir,
                            errno != 0 ? strerror(errno) : "not a directory");
    else if (cfg->tls_ca_dir != NULL &&
             SSL_CTX_load_verify_locations(tls->ctx, NULL, cfg->tls_ca_dir) != 1)
        *rc = file_error("tls_ca_dir", cfg->tls_ca_dir, msg, msg_len);
    else if (cfg->tls_ca_file == NULL && cfg->tls_ca_dir == NULL &&
             SSL_CTX_set_default_verify_paths(tls->ctx) != 1)
        *rc = breaker__fail(BREAKER_EINVAL, msg, msg_len,
                            "tls_ca_file: NULL, and OpenSSL's default CAs could not be read");
    else if (cfg->tls_cert_file != NULL &&
             SSL_CTX_use_certificate_chain_file(tls->ctx, cfg->tls_cert_file) != 1)
        *rc = file_error("tls_cert_file", cfg->tls_cert_file, msg, msg_len);
    else if (cfg->tls_key_file != NULL &&
             SSL_CTX_use_PrivateKey_file(tls->ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1)
        *rc = file_error("tls_key_file", cfg->tls_key_file, msg, msg_len);
    else if (cfg->tls_key_file != NULL && SSL_CTX_check_private_key(tls->ctx) != 1)
        *rc = breaker__fail(BREAKER_EINVAL, msg, msg_len,
                            "tls_key_file: %s is not the key of tls_cert_file %s",
                            cfg->tls_key_file, cfg->tls_cert_file);
    ERR_clear_error();
    if (*rc == BREAKER_OK) return tls;
    breaker__redis_tls_free(tls);
    return NULL;
nomem:
    breaker__redis_tls_free(tls);
    *rc = breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    return NULL;
}

void breaker__redis_tls_free(struct net_tls *tls) {
    if (tls == NULL) return;
    SSL_CTX_free(tls->ctx);
    free(tls->server_name);
    free(tls);
}

/* What to fix when the server's certificate was refused for `v`. */
static const char *verify_hint(long v) {
    switch (v) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return "it is for another name: tls_server_name names the one it carries";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return "renew the server's certificate (or check the clock)";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        return "no CA of tls_ca_file or tls_ca_dir signed it";
    default:
        return "see tls_ca_file, tls_ca_dir and tls_server_name";
    }
}

int breaker__redis_tls_start(const struct net_tls *tls, redisContext *c, const char *host,
                             uint64_t timeout_ns, char *why, size_t why_len) {
    ERR_clear_error();
    asked_for_certificate = 0;
    SSL *ssl = SSL_new(tls->ctx);
    if (ssl == NULL) {
        snprintf(why, why_len, "TLS handshake: out of memory");
        return 0;
    }
    const char *name = tls->server_name != NULL ? tls->server_name : host;
    unsigned char addr[16];
    int is_ip = inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
    int ok = 1;
    if (!is_ip) ok = SSL_set_tlsext_host_name(ssl, name) == 1; /* SNI: names only */
    if (ok && tls->verify) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok =
            is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name) == 1 : SSL_set1_host(ssl, name) == 1;
    }
    if (!ok) {
        snprintf(why, why_len, "TLS: '%.200s' cannot be checked as a host name or address", name);
        SSL_free(ssl);
        return 0;
    }
    if (redisInitiateSSL(c, ssl) == REDIS_OK) return 1; /* hiredis owns ssl now */
    long v = SSL_get_verify_result(ssl);
    unsigned long e = ERR_peek_last_error();
    if (tls->verify && v != X509_V_OK)
        snprintf(why, why_len, "TLS: the server's certificate is refused: %s (%s)",
                 X509_verify_cert_error_string(v), verify_hint(v));
    else if (e != 0)
        snprintf(why, why_len, "TLS: the handshake failed: %s%s", ERR_reason_error_string(e),
                 ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
                         ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG
                     ? " (does the server speak TLS on this port?)"
                     : "");
    else
        breaker__redis_io_reason(c, "TLS handshake", timeout_ns, why, why_len);
    /* A Redis without TLS on the port reads the handshake as the start of
     * a command and waits for its end: silence, as from a stalled server
     * (an outage, then), so the reason says both. */
    if (!(tls->verify && v != X509_V_OK) && e == 0 && c->err == REDIS_ERR_IO) {
        size_t len = strlen(why);
        snprintf(why + len, why_len - len, " (or the server does not speak TLS on this port)");
    }
    ERR_clear_error();
    SSL_free(ssl);
    return 0;
}

int breaker__redis_tls_refused(const char *what, char *why, size_t why_len) {
    unsigned long e = ERR_peek_last_error();
    if (e != 0)
        snprintf(why, why_len, "TLS: the server refused the connection at %s: %s%s", what,
                 ERR_reason_error_string(e),
                 asked_for_certificate ? " (it asked for a client certificate: tls_cert_file, "
                                         "tls_key_file)"
                                       : "");
    else if (asked_for_certificate)
        snprintf(why, why_len,
                 "TLS: the server asked for a client certificate, got none, and closed the "
                 "connection at %s (tls_cert_file, tls_key_file)",
                 what);
    else
        return 0;
    ERR_clear_error();
    return 1;
}

#else /* !BREAKER_REDIS_HAVE_TLS */

int breaker__redis_tls_check(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    int rc = check_fields(cfg, msg, msg_len);
    if (rc == BREAKER_OK && cfg->tls)
        rc = breaker__fail(BREAKER_EINVAL, msg, msg_len,
                           "tls: this build has no TLS (hiredis < 1.0 or hiredis_ssl not found)");
    return rc;
}

struct net_tls *breaker__redis_tls_create(const breaker_redis_config *cfg, int *rc, char *msg,
                                          size_t msg_len) {
    (void)cfg;
    *rc = breaker__fail(BREAKER_EINVAL, msg, msg_len,
                        "tls: this build has no TLS (hiredis < 1.0 or hiredis_ssl not found)");
    return NULL;
}

void breaker__redis_tls_free(struct net_tls *tls) { (void)tls; }

int breaker__redis_tls_start(const struct net_tls *tls, redisContext *c, const char *host,
                             uint64_t timeout_ns, char *why, size_t why_len) {
    (void)tls;
    (void)c;
    (void)host;
    (void)timeout_ns;
    snprintf(why, why_len, "TLS: this build has no TLS");
    return 0;
}

int breaker__redis_tls_refused(const char *what, char *why, size_t why_len) {
    (void)what;
    (void)why;
    (void)why_len;
    return 0;
}

#endif /* BREAKER_REDIS_HAVE_TLS */
