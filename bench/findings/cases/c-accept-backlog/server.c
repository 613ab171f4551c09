/* A single-threaded epoll server with a listen backlog of 2 that closes each connection
 * after its response (Connection: close) and renders each page with ~2 ms of CPU: new
 * connections overflow the accept queue, and their SYNs wait for the client's retransmit.
 * usage: server */
#include "mini_http.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>

static __attribute__((noinline)) uint64_t render_page(uint64_t x) {
    for (int i = 0; i < 2000000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    int lfd = listen_any(2);
    fcntl(lfd, F_SETFL, O_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    struct conn *nc = calloc(1, sizeof *nc);
                    if (!nc) die("calloc");
                    nc->fd = fd;
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                }
                continue;
            }
            ssize_t r = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
            if (r > 0) c->have += (size_t)r;
            int done = r == 0 || (r < 0 && errno != EAGAIN);
            if (!done && memmem(c->buf, c->have, "\r\n\r\n", 4)) {
                char body[64], out[320];
                int len = snprintf(body, sizeof body, "page %llu\n", (unsigned long long)render_page((uint64_t)c->fd));
                int h = format_head(out, sizeof out - sizeof body, 200, (size_t)len, 0);
                memcpy(out + h, body, (size_t)len);
                /* The socket is nonblocking; a response this small fits its buffer. */
                if (write(c->fd, out, (size_t)(h + len)) < 0) perror("write");
                done = 1;
            }
            if (done) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
            }
        }
    }
}
