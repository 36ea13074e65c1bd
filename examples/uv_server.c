/* uv_server.c -- a tiny lock service on a libuv loop: the non-blocking API.
 *
 *   uv_server [-p PORT] [-b ADDR] [-f] URI...
 *   uv_server -p 7400 redis://127.0.0.1:7001 redis://127.0.0.1:7002 redis://127.0.0.1:7003
 *
 * Clients send lines "KEY\n". For each line the server takes a Redlock on
 * KEY (TTL 2000 ms, waiting up to 1000 ms for it), answers
 *   granted <N>\n      N: the fencing token with -f, else the validity in ms
 *   refused <why>\n    why: redlock_strerror() of the result
 * and releases the lock again. A client's lines are answered in order, one
 * at a time; many clients are served at once, and the loop never blocks:
 * the locking goes through redlock_async_* and include/redlock/libuv.h.
 * A client that closes its side of the connection is gone: the acquire it
 * waits for is cancelled (redlock_async_cancel) and its connection closed.
 *
 * PORT 0 (the default is 7400) picks a free port; the line "listening on
 * ADDR:PORT" on stdout tells which. SIGINT or SIGTERM stops the server: it
 * stops listening, cancels what is pending, closes every connection, frees
 * everything and exits 0. Exit status 1 when it cannot start, 2 on a usage
 * error. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redlock.h>
#include <redlock/libuv.h>
#include <uv.h>

#define TTL_MS 2000
#define WAIT_MS 1000
#define INBUF 4096 /* one client's unread input; a line longer than this is refused */

typedef struct client client_t;

/* One request line on its way through the lock service. */
typedef struct request {
    client_t *client;
} request_t;

struct client {
    uv_tcp_t tcp;
    client_t *prev, *next; /* the server's list */
    request_t *req;        /* the line being served, or NULL */
    int refs;              /* the open handle + a request in flight */
    int closing;           /* uv_close called */
    int draining;          /* refused a line too long: closes once the answer is out */
    int reading;
    size_t in_len;
    char in[INBUF];
};

static struct {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_signal_t sigint, sigterm;
    redlock_async_t *a;
    client_t *clients;
    int fencing;
    int stopping;
} srv;

static void client_pump(client_t *c);
static void client_resume(client_t *c);

/* Drops one reference; the client's memory goes with the last. */
static void client_unref(client_t *c) {
    if (--c->refs == 0) free(c);
}

/* Close callback of a client's socket. */
static void client_closed(uv_handle_t *h) {
    client_unref((client_t *)h->data);
}

/* Closes a client: unlists it, cancels its pending acquire (its callback
 * still runs, later, and drops the request's reference) and closes the
 * socket. Pending writes are cancelled by uv_close. */
static void client_close(client_t *c) {
    if (c->closing) return;
    c->closing = 1;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv.clients = c->next;
    if (c->next) c->next->prev = c->prev;
    if (c->req && srv.a) redlock_async_cancel(srv.a, c->req);
    uv_close((uv_handle_t *)&c->tcp, client_closed);
}

/* Write callback: the answer's buffer goes. */
static void written(uv_write_t *w, int status) {
    (void)status; /* a failed write shows up as a read error or EOF too */
    free(w);
}

/* Sends one answer line (formatted) to c. */
static void answer(client_t *c, const char *fmt, ...) {
    if (c->closing) return;
    uv_write_t *w = malloc(sizeof *w + 256);
    if (!w) {
        client_close(c);
        return;
    }
    char *text = (char *)(w + 1);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, 256, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > 255) n = 255;
    uv_buf_t buf = uv_buf_init(text, (unsigned)n);
    if (uv_write(w, (uv_stream_t *)&c->tcp, &buf, 1, written) != 0) {
        free(w);
        client_close(c);
    }
}

/* Release callback: only says when a release did not reach a quorum. */
static void released(int rc, const redlock_report_t *report, void *arg) {
    (void)arg;
    if (rc != REDLOCK_OK)
        fprintf(stderr, "uv_server: release: %s: %s\n", redlock_strerror(rc), report ? report->message : "");
}

/* Acquire callback: answers, gives the lock back, then serves the client's
 * next line. Runs from the loop, or from inside redlock_async_free while
 * the server stops (rc REDLOCK_ERR_CANCELLED, nothing more is started). */
static void acquired(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg) {
    request_t *req = arg;
    client_t *c = req->client;
    (void)report;
    c->req = NULL;
    free(req);
    if (rc == REDLOCK_OK) {
        if (srv.fencing)
            answer(c, "granted %llu\n", (unsigned long long)redlock_lock_fence(lock));
        else
            answer(c, "granted %lld\n", (long long)redlock_lock_validity_ms(lock));
        if (srv.stopping || !srv.a || redlock_async_release(srv.a, lock, released, NULL) != REDLOCK_OK)
            redlock_lock_free(lock); /* not released: its keys expire by the TTL */
    } else {
        answer(c, "refused %s\n", redlock_strerror(rc));
    }
    int open = !c->closing;
    client_unref(c);
    if (open && !srv.stopping) client_pump(c);
}

/* Shutdown callback after a refused over-long line: now close. */
static void drained(uv_shutdown_t *r, int status) {
    client_t *c = r->handle->data;
    (void)status;
    free(r);
    client_close(c);
}

/* Serves c's buffered input: while no request is in flight, takes the next
 * line and starts its acquire (the resource name is copied by the call, so
 * the line's bytes can go at once). Reading pauses while the buffer is full
 * and a request is in flight; a full buffer without a line is refused, and
 * the client closed once the answer is out. */
static void client_pump(client_t *c) {
    while (!c->req && !c->closing && !c->draining) {
        char *nl = memchr(c->in, '\n', c->in_len);
        if (!nl) {
            if (c->in_len < INBUF) break;
            answer(c, "refused line too long\n");
            c->draining = 1;
            uv_read_stop((uv_stream_t *)&c->tcp);
            c->reading = 0;
            uv_shutdown_t *r = malloc(sizeof *r);
            if (!r || uv_shutdown(r, (uv_stream_t *)&c->tcp, drained) != 0) {
                free(r);
                client_close(c);
            }
            return;
        }
        size_t consumed = (size_t)(nl - c->in) + 1, len = consumed - 1;
        *nl = '\0';
        if (len && c->in[len - 1] == '\r') c->in[--len] = '\0';
        if (len) {
            int rc = REDLOCK_ERR_NOMEM;
            request_t *req = malloc(sizeof *req);
            if (req) {
                req->client = c;
                rc = redlock_async_acquire(srv.a, c->in, TTL_MS, WAIT_MS, acquired, req);
            }
            if (rc == REDLOCK_OK) {
                c->req = req;
                c->refs++;
            } else {
                free(req);
                answer(c, "refused %s\n", redlock_strerror(rc));
            }
        }
        c->in_len -= consumed;
        memmove(c->in, c->in + consumed, c->in_len);
    }
    if (c->closing || c->draining) return;
    if (c->in_len == INBUF && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    } else if (c->in_len < INBUF) {
        client_resume(c);
    }
}

/* Read buffer: the free end of the client's input buffer. */
static void client_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    client_t *c = h->data;
    (void)hint;
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(INBUF - c->in_len));
}

/* Input from a client: appended to its buffer and served; EOF or an error
 * closes the client. */
static void client_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    client_t *c = s->data;
    (void)buf;
    if (n < 0) {
        client_close(c);
        return;
    }
    c->in_len += (size_t)n;
    client_pump(c);
}

/* Restarts reading where the buffer has room again (after a line went). */
static void client_resume(client_t *c) {
    if (!c->closing && !c->reading && c->in_len < INBUF) {
        if (uv_read_start((uv_stream_t *)&c->tcp, client_alloc, client_read) == 0)
            c->reading = 1;
        else
            client_close(c);
    }
}

/* A new connection: accepted, listed, read from. */
static void on_connection(uv_stream_t *listener, int status) {
    if (status < 0 || srv.stopping) return;
    client_t *c = calloc(1, sizeof *c);
    if (!c) return;
    if (uv_tcp_init(&srv.loop, &c->tcp) != 0) {
        free(c);
        return;
    }
    c->tcp.data = c;
    c->refs = 1;
    c->next = srv.clients;
    if (srv.clients) srv.clients->prev = c;
    srv.clients = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        client_close(c);
        return;
    }
    client_resume(c);
}

/* SIGINT / SIGTERM: stop listening, free the handle (pending acquires are
 * answered "refused" with CANCELLED from inside the free), close every
 * client and the signal handles; uv_run then returns by itself. */
static void on_signal(uv_signal_t *s, int signum) {
    (void)s;
    (void)signum;
    if (srv.stopping) return;
    srv.stopping = 1;
    uv_close((uv_handle_t *)&srv.listener, NULL);
    redlock_async_t *a = srv.a;
    srv.a = NULL;
    redlock_async_free(a);
    while (srv.clients) client_close(srv.clients);
    uv_close((uv_handle_t *)&srv.sigint, NULL);
    uv_close((uv_handle_t *)&srv.sigterm, NULL);
}

/* Prints the usage line. */
static void usage(const char *prog) {
    fprintf(stderr, "usage: %s [-p PORT] [-b ADDR] [-f] URI...\n", prog);
}

int main(int argc, char **argv) {
    const char *bind_addr = "127.0.0.1";
    long port = 7400;
    int opt;
    while ((opt = getopt(argc, argv, "p:b:fh")) != -1) {
        switch (opt) {
        case 'p': {
            char *end;
            port = strtol(optarg, &end, 10);
            if (*end || port < 0 || port > 65535) {
                usage(argv[0]);
                return 2;
            }
            break;
        }
        case 'b': bind_addr = optarg; break;
        case 'f': srv.fencing = 1; break;
        default: usage(argv[0]); return 2;
        }
    }
    if (optind >= argc || argc - optind > REDLOCK_MAX_NODES) {
        usage(argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is a write error, not a death */

    redlock_options_t o;
    redlock_options_init(&o);
    o.nodes = (const char *const *)&argv[optind];
    o.n_nodes = (size_t)(argc - optind);
    o.fencing = srv.fencing;
    o.retry_count = 1000; /* retries go on until WAIT_MS is over */
    int rc = redlock_async_new(&srv.a, &o);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "uv_server: redlock_async_new: %s\n", redlock_strerror(rc));
        return 1;
    }
    if (uv_loop_init(&srv.loop) != 0) {
        redlock_async_free(srv.a);
        return 1;
    }
    rc = redlock_libuv_attach(srv.a, &srv.loop);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "uv_server: redlock_libuv_attach: %s\n", redlock_strerror(rc));
        redlock_async_free(srv.a);
        uv_run(&srv.loop, UV_RUN_DEFAULT); /* lets the adapter's closed handles go */
        uv_loop_close(&srv.loop);
        return 1;
    }

    struct sockaddr_storage addr;
    int err = uv_ip4_addr(bind_addr, (int)port, (struct sockaddr_in *)&addr);
    if (err) err = uv_ip6_addr(bind_addr, (int)port, (struct sockaddr_in6 *)&addr);
    if (!err) err = uv_tcp_init(&srv.loop, &srv.listener);
    if (!err) {
        err = uv_tcp_bind(&srv.listener, (const struct sockaddr *)&addr, 0);
        if (!err) err = uv_listen((uv_stream_t *)&srv.listener, 128, on_connection);
        if (err) uv_close((uv_handle_t *)&srv.listener, NULL);
    }
    if (err) {
        fprintf(stderr, "uv_server: listen on %s:%ld: %s\n", bind_addr, port, uv_strerror(err));
        redlock_async_free(srv.a);
        uv_run(&srv.loop, UV_RUN_DEFAULT);
        uv_loop_close(&srv.loop);
        return 1;
    }
    int namelen = (int)sizeof addr;
    uv_tcp_getsockname(&srv.listener, (struct sockaddr *)&addr, &namelen);
    char host[64] = "?";
    int bound_port = 0;
    if (addr.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&addr, host, sizeof host);
        bound_port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&addr, host, sizeof host);
        bound_port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
    }
    uv_signal_init(&srv.loop, &srv.sigint);
    uv_signal_init(&srv.loop, &srv.sigterm);
    uv_signal_start(&srv.sigint, on_signal, SIGINT);
    uv_signal_start(&srv.sigterm, on_signal, SIGTERM);
    printf("listening on %s:%d\n", host, bound_port);
    fflush(stdout);

    uv_run(&srv.loop, UV_RUN_DEFAULT);
    rc = uv_loop_close(&srv.loop);
    if (rc != 0) fprintf(stderr, "uv_server: handles left on the loop: %s\n", uv_strerror(rc));
    return rc == 0 ? 0 : 1;
}
