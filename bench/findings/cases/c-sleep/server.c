/* A handler that paces itself: throttle() sleeps 5 ms (usleep) in every request.
 * usage: server */
#include "mini_http.h"

static __attribute__((noinline)) void throttle(void) {
    usleep(5000);
    /* Not a tail call: at -O2 `jmp usleep` would leave throttle off every stack (perf and
     * any unwinder see usleep under serve then), and the case would plant a function no
     * profiler can name. */
    __asm__ volatile("" ::: "memory");
}

static void *serve(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        throttle();
        if (respond(c->fd, 200, "ok\n", 3) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
