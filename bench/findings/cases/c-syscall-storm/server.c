/* Metrics sent one datagram at a time: every request reports 48 counters to a local
 * statsd-style collector, each in its own sendto(2) on a UDP socket. The collector (a
 * socket the server binds and never reads, as a dead collector would) drops them once
 * its buffer is full; the kernel does the whole send each time.
 * usage: server */
#include "mini_http.h"

#define METRICS 48

static int metrics_fd;
static struct sockaddr_in collector;

static __attribute__((noinline)) void emit_metrics(size_t n) {
    char line[64];
    for (int i = 0; i < METRICS; i++) {
        int len = snprintf(line, sizeof line, "http.req.%d:%zu|c", i, n);
        sendto(metrics_fd, line, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&collector,
               sizeof collector);
    }
    __asm__ volatile("" ::: "memory");
}

static int handle(int fd, size_t n) {
    emit_metrics(n);
    return respond(fd, 200, "ok\n", 3);
}

int main(void) {
    int sink = socket(AF_INET, SOCK_DGRAM, 0);
    collector = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = 0};
    collector.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sink < 0 || bind(sink, (struct sockaddr *)&collector, sizeof collector) < 0) die("collector");
    socklen_t len = sizeof collector;
    if (getsockname(sink, (struct sockaddr *)&collector, &len) < 0) die("getsockname");
    metrics_fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (metrics_fd < 0) die("socket");
    serve_each_request(listen_any(128), handle);
}
