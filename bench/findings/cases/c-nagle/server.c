/* A keep-alive server that writes each response's head and body in two write(2)s and
 * leaves Nagle's algorithm on (no TCP_NODELAY): the body waits in the kernel for the
 * client's ACK of the head, which the client delays (delayed ACK, ~40 ms).
 * usage: server */
#include "mini_http.h"

static __attribute__((noinline)) int send_response(int fd, const char *body, size_t len) {
    char head[256];
    int h = format_head(head, sizeof head, 200, len, 1);
    if (write_all(fd, head, (size_t)h) < 0) return -1;
    return write_all(fd, body, len);
}

static void *serve(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        if (send_response(c->fd, "{\"status\":\"ok\"}\n", 16) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
