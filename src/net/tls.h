/* tls.h -- OpenSSL for rediss:// nodes: one client context per redlock_t,
 * one session per connection, a non-blocking handshake. */
#ifndef RL_TLS_H
#define RL_TLS_H
#include <stddef.h>

#include "redlock.h"

typedef struct rl_tls_ctx rl_tls_ctx_t; /* really an SSL_CTX */

/* Makes the client context from opt's tls_* fields. Returns REDLOCK_OK,
 * or REDLOCK_ERR_CONFIG with a message naming the file or setting. */
int rl_tls_ctx_new(rl_tls_ctx_t **out, const redlock_options_t *opt, char *err, size_t errlen);
void rl_tls_ctx_free(rl_tls_ctx_t *ctx); /* NULL-safe; drops one reference */

/* Takes one more reference to ctx (NULL-safe) and returns it: a thread
 * that may outlive the handle holds its own, and lets go of it with
 * rl_tls_ctx_unref; the context is freed with the last reference. */
rl_tls_ctx_t *rl_tls_ctx_ref(rl_tls_ctx_t *ctx);
void rl_tls_ctx_unref(rl_tls_ctx_t *ctx); /* NULL-safe */

/* Starts a session on the connected socket fd for host (verified against
 * the certificate and sent as SNI unless it is an address; server_name
 * overrides it). Returns the session or NULL (detail says why). */
void *rl_tls_session(rl_tls_ctx_t *ctx, int fd, const char *host, const char *server_name, int verify, char *detail,
                     size_t n);
void rl_tls_close(void *ssl); /* NULL-safe */

/* Advances the handshake: 0 done, RL_TLS_WANT_READ / RL_TLS_WANT_WRITE to
 * wait for the socket, or -1 with the reason (certificate problems named). */
enum { RL_TLS_WANT_READ = 1, RL_TLS_WANT_WRITE = 2 };
int rl_tls_handshake(void *ssl, char *detail, size_t n);

/* Reads / writes like recv / send: > 0 bytes, 0 closed (read only), -1
 * with errno EAGAIN when the socket must be waited for, other -1 errors
 * with detail set. Writes never raise SIGPIPE. */
long rl_tls_read(void *ssl, void *buf, size_t len, char *detail, size_t n);
long rl_tls_write(void *ssl, const void *buf, size_t len, char *detail, size_t n);

/* 1 when the session holds decrypted bytes that a read returns without
 * the socket becoming readable, else 0. */
int rl_tls_pending(void *ssl);

#endif
