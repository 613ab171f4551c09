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

static int handle(int fd, size_t n) {
    (void)n;
    return send_response(fd, "{\"status\":\"ok\"}\n", 16);
}

int main(void) {
    serve_each_request(listen_any(128), handle);
}
