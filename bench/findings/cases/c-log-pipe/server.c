/* An access log written to a pipe: every request appends a 1 KiB line to file
 * descriptor 3 (write, unbuffered), which the case connects to a log collector that
 * reads slowly. When the pipe's buffer is full, each write waits for the collector.
 * usage: server  (fd 3 open for writing) */
#include "mini_http.h"

static __attribute__((noinline)) void access_log(size_t n) {
    char line[1024];
    int len = snprintf(line, sizeof line, "GET / 200 %zu ", n);
    memset(line + len, '-', sizeof line - (size_t)len - 1);
    line[sizeof line - 1] = '\n';
    if (write(3, line, sizeof line) < 0) perror("access log");
    __asm__ volatile("" ::: "memory");
}

static int handle(int fd, size_t n) {
    if (respond(fd, 200, "ok\n", 3) < 0) return -1;
    access_log(n);
    return 0;
}

int main(void) {
    serve_each_request(listen_any(128), handle);
}
