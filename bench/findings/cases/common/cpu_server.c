/* A thread-per-connection server whose handler spends ROUNDS steps of compute_digest()
 * on each request (about 1.3 ns a step): the plain CPU worker the starvation cases put
 * beside a neighbour or under a quota, and the fast server the client-limited case drives.
 * usage: cpu_server ROUNDS */
#include "mini_http.h"
#include "digest.h"

static long rounds;

static void *serve(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        char body[64];
        int len = snprintf(body, sizeof body, "%llu\n", (unsigned long long)compute_digest((uint64_t)c->fd, rounds));
        if (respond(c->fd, 200, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s ROUNDS\n", argv[0]); return 2; }
    rounds = atol(argv[1]);
    serve_thread_per_connection(listen_any(128), serve);
}
