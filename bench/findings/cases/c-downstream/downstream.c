/* The slow downstream: an "inventory service" answering each request after 20 ms.
 * usage: downstream */
#include "../common/mini_http.h"
#include <time.h>

static void *serve(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (respond(c->fd, 200, "in stock\n", 9) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
