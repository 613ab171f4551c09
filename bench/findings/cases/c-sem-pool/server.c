/* A pool of three upstream "connections" behind a POSIX semaphore: every request takes
 * one (sem_wait), uses it for 1.5 ms (a blocking call upstream, here a sleep) and gives it
 * back. 16 connection threads share the three.
 * usage: server */
#include "mini_http.h"
#include <semaphore.h>

static sem_t upstream;

static __attribute__((noinline)) void call_upstream(void) {
    sem_wait(&upstream);
    usleep(1500);
    sem_post(&upstream);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void render_quote(void) {
    call_upstream();
    __asm__ volatile("" ::: "memory");
}

static int handle(int fd, size_t n) {
    (void)n;
    render_quote();
    return respond(fd, 200, "ok\n", 3);
}

int main(void) {
    sem_init(&upstream, 0, 3);
    serve_each_request(listen_any(128), handle);
}
