/* Each request builds its answer in a fresh 1 MiB buffer: malloc(3) above the mmap
 * threshold (fixed at 128 KiB, as MALLOC_MMAP_THRESHOLD_ would) maps it, the handler
 * touches every page, free(3) unmaps it: 256 page faults and an mmap/munmap pair each.
 * usage: server */
#include "mini_http.h"
#include <malloc.h>
#include <stdint.h>

#define SCRATCH (1024 * 1024)

static __attribute__((noinline)) uint64_t build_report(unsigned seed) {
    unsigned char *scratch = malloc(SCRATCH);
    if (!scratch) die("malloc");
    memset(scratch, (int)(seed & 0xff), SCRATCH);
    uint64_t sum = 0;
    for (size_t i = 0; i < SCRATCH; i += 4096) sum += scratch[i] + i;
    free(scratch);
    return sum;
}

static void *serve(void *arg) {
    struct conn *c = arg;
    unsigned seed = (unsigned)c->fd;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        char body[64];
        int len = snprintf(body, sizeof body, "%llu\n", (unsigned long long)build_report(seed++));
        if (respond(c->fd, 200, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    serve_thread_per_connection(listen_any(128), serve);
}
