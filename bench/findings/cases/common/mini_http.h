/* A minimal HTTP/1.1 server kit for the findings corpus: listen on 127.0.0.1 on a free
 * port, read request heads (GET, no bodies, keep-alive), write responses.
 * Each case's server includes it; it is deliberately small and plain. */
#ifndef MINI_HTTP_H
#define MINI_HTTP_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQ_CAP 8192
/* Every case uses part of the kit. */
#define MH_FN static __attribute__((unused))

MH_FN void die(const char *what) {
    perror(what);
    exit(1);
}

/* Listens on 127.0.0.1 on a free port with the given backlog; prints
 * "listening on 127.0.0.1:PORT" on stdout (the scripts wait for that line). */
MH_FN int listen_any(int backlog) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(fd, backlog) < 0) die("listen");
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) die("getsockname");
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    return fd;
}

/* A connection's read buffer: bytes received and not yet consumed. */
struct conn {
    int fd;
    size_t have;
    char buf[REQ_CAP];
};

/* Reads until a whole request head is buffered. Returns its length (the caller consumes
 * it with conn_consume), 0 at end of stream, -1 on error or an oversized head. */
MH_FN ssize_t read_request(struct conn *c) {
    for (;;) {
        char *end = c->have ? memmem(c->buf, c->have, "\r\n\r\n", 4) : NULL;
        if (end) return (end - c->buf) + 4;
        if (c->have == sizeof c->buf) return -1;
        ssize_t n = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
        if (n == 0) return 0;
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c->have += (size_t)n;
    }
}

MH_FN void conn_consume(struct conn *c, size_t n) {
    memmove(c->buf, c->buf + n, c->have - n);
    c->have -= n;
}

MH_FN int write_all(int fd, const void *p, size_t n) {
    const char *s = p;
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Formats a response head for a body of len bytes. */
MH_FN int format_head(char *head, size_t cap, int status, size_t len, int keep_alive) {
    const char *reason = status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Error";
    return snprintf(head, cap,
                    "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
                    status, reason, len, keep_alive ? "" : "Connection: close\r\n");
}

/* Writes a whole response (head and body) in one write. */
MH_FN int respond(int fd, int status, const char *body, size_t len) {
    char out[REQ_CAP];
    int h = format_head(out, sizeof out, status, len, 1);
    if ((size_t)h + len > sizeof out) return -1;
    memcpy(out + h, body, len);
    return write_all(fd, out, (size_t)h + len);
}

/* Accepts forever, one detached thread per connection running fn(conn). */
MH_FN void serve_thread_per_connection(int lfd, void *(*fn)(void *)) {
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            die("accept");
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) die("calloc");
        c->fd = fd;
        pthread_t t;
        if (pthread_create(&t, NULL, fn, c) != 0) die("pthread_create");
        pthread_detach(t);
    }
}

/* What a case does with one request on connection fd (n: the request head's length):
 * its work and its response. Returns < 0 to close the connection. */
typedef int (*request_fn)(int fd, size_t n);

static request_fn mh_handler;

/* A connection's thread: each request read, consumed and handed to the case's handler. */
MH_FN void *serve_requests(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        if (mh_handler(c->fd, (size_t)n) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

/* Accepts forever, one thread per connection, every request handled by fn. */
MH_FN void serve_each_request(int lfd, request_fn fn) {
    mh_handler = fn;
    serve_thread_per_connection(lfd, serve_requests);
}

#endif
