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

static int handle(int fd, size_t n) {
    (void)n;
    throttle();
    return respond(fd, 200, "ok\n", 3);
}

int main(void) {
    serve_each_request(listen_any(128), handle);
}
