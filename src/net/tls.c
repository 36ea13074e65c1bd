/* tls.c -- OpenSSL client side for rediss:// nodes (see tls.h). */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Appends OpenSSL's queued error in words to prefix, into detail. */
static void ssl_reason(const char *prefix, char *detail, size_t n) {
    unsigned long e = ERR_get_error();
    char why[160] = "no further detail";
    if (e) ERR_error_string_n(e, why, sizeof why);
    ERR_clear_error();
    snprintf(detail, n, "%s: %s", prefix, why);
}

int rl_tls_ctx_new(rl_tls_ctx_t **out, const redlock_options_t *o, char *err, size_t n) {
    *out = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return snprintf(err, n, "cannot create a TLS context"), REDLOCK_ERR_NOMEM;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, o->tls_verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    const char *bad = NULL;
    if (o->tls_ca_file || o->tls_ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir) != 1)
            bad = o->tls_ca_file ? "tls_ca_file" : "tls_ca_dir";
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        bad = "the system's default CA store";
    }
    if (!bad && (!o->tls_cert_file) != (!o->tls_key_file)) {
        snprintf(err, n, "tls_cert_file and tls_key_file go together (only %s is set)",
                 o->tls_cert_file ? "tls_cert_file" : "tls_key_file");
        SSL_CTX_free(ctx);
        return REDLOCK_ERR_CONFIG;
    }
    if (!bad && o->tls_cert_file && SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1)
        bad = "tls_cert_file";
    if (!bad && o->tls_key_file &&
        (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1))
        bad = "tls_key_file";
    if (bad) {
        const char *file = !strcmp(bad, "tls_ca_file")     ? o->tls_ca_file
                           : !strcmp(bad, "tls_ca_dir")    ? o->tls_ca_dir
                           : !strcmp(bad, "tls_cert_file") ? o->tls_cert_file
                           : !strcmp(bad, "tls_key_file")  ? o->tls_key_file
                                                           : "";
        char why[200];
        ssl_reason("", why, sizeof why);
        snprintf(err, n, "%s='%.120s' cannot be used%s", bad, file, why);
        SSL_CTX_free(ctx);
        return REDLOCK_ERR_CONFIG;
    }
    *out = (rl_tls_ctx_t *)ctx;
    return REDLOCK_OK;
}

void rl_tls_ctx_free(rl_tls_ctx_t *ctx) {
    if (ctx) SSL_CTX_free((SSL_CTX *)ctx);
}

rl_tls_ctx_t *rl_tls_ctx_ref(rl_tls_ctx_t *ctx) {
    if (ctx && SSL_CTX_up_ref((SSL_CTX *)ctx) != 1) return NULL;
    return ctx;
}

void rl_tls_ctx_unref(rl_tls_ctx_t *ctx) {
    rl_tls_ctx_free(ctx);
}

int rl_tls_pending(void *ssl) {
    return ssl && SSL_pending((SSL *)ssl) > 0;
}

/* 1 when host is a literal IPv4 or IPv6 address. */
static int is_address(const char *host) {
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

void *rl_tls_session(rl_tls_ctx_t *ctx, int fd, const char *host, const char *server_name, int verify, char *detail,
                     size_t n) {
    SSL *ssl = SSL_new((SSL_CTX *)ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        ssl_reason("TLS session", detail, n);
        SSL_free(ssl);
        return NULL;
    }
    const char *name = server_name ? server_name : host;
    int ok = 1;
    if (!is_address(name)) ok = SSL_set_tlsext_host_name(ssl, name) == 1;
    if (ok && verify) /* the certificate must name this host, not just chain to a trusted CA */
        ok = is_address(name) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
                              : SSL_set1_host(ssl, name) == 1;
    if (!ok) {
        ssl_reason("TLS host name", detail, n);
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

void rl_tls_close(void *ssl) {
    if (ssl) SSL_free(ssl);
}

int rl_tls_handshake(void *p, char *detail, size_t n) {
    SSL *ssl = p;
    ERR_clear_error();
    int r = SSL_connect(ssl);
    if (r == 1) return 0;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ) return RL_TLS_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE) return RL_TLS_WANT_WRITE;
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
        ERR_clear_error();
        snprintf(detail, n, "TLS handshake failed: certificate rejected: %s", X509_verify_cert_error_string(v));
    } else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
        ERR_clear_error();
        snprintf(detail, n, "TLS handshake failed: connection closed by the node (not a TLS port?)");
    } else {
        ssl_reason("TLS handshake failed", detail, n);
    }
    return -1;
}

long rl_tls_read(void *p, void *buf, size_t len, char *detail, size_t n) {
    SSL *ssl = p;
    ERR_clear_error();
    int r = SSL_read(ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len));
    if (r > 0) return r;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) return 0;
    ssl_reason("TLS read", detail, n);
    errno = EIO;
    return -1;
}

/* SSL_write on a socket the node closed would raise SIGPIPE: block it in
 * this thread around the write and swallow one that became pending. */
long rl_tls_write(void *p, const void *buf, size_t len, char *detail, size_t n) {
    SSL *ssl = p;
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigset_t before;
    sigpending(&before);
    ERR_clear_error();
    int r = SSL_write(ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len));
    int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, r);
    if (e == SSL_ERROR_SYSCALL && !sigismember(&before, SIGPIPE)) { /* ours, not the application's */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r > 0) return r;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    ssl_reason("TLS write", detail, n);
    errno = EIO;
    return -1;
}
