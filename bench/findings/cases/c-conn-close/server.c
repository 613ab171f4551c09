/* Keep-alive turned off: the server answers each request with `Connection: close` and
 * closes the connection, so every request of a client pays a new TCP connection (the
 * handshake, the accept, a thread, the teardown) for a few bytes of work.
 * usage: server */
#include "mini_http.h"

static __attribute__((noinline)) int answer_and_close(int fd) {
    char out[256];
    int h = format_head(out, sizeof out, 200, 3, 0);
    memcpy(out + h, "ok\n", 3);
    return write_all(fd, out, (size_t)h + 3);
}

static void *serve(void *arg) {
    struct conn *c = arg;
    if (read_request(c) > 0) answer_and_close(c->fd);
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
