/* A front server with a pool of 2 workers; each request asks the inventory service (a
 * local downstream that takes 20 ms) over the worker's own keep-alive connection
 * (call_inventory_service) before answering. An epoll thread hands ready client
 * connections to the workers through a queue, where requests wait for a free worker.
 * usage: server DOWNSTREAM-PORT */
#include "mini_http.h"
#include <sys/epoll.h>

#define WORKERS 2

static int ep, downstream_port;
static struct conn *queue[4096];
static size_t q_head, q_tail;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_ready = PTHREAD_COND_INITIALIZER;

static int connect_downstream(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)downstream_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect downstream");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static __attribute__((noinline)) int call_inventory_service(struct conn *down) {
    static const char req[] = "GET /stock HTTP/1.1\r\nHost: inventory\r\n\r\n";
    if (write_all(down->fd, req, sizeof req - 1) < 0) return -1;
    /* The answer: a head and a 9-byte body ("in stock\n"), read with recv(2). */
    for (;;) {
        char *end = memmem(down->buf, down->have, "\r\n\r\n", 4);
        if (end && down->have >= (size_t)(end - down->buf) + 4 + 9) {
            conn_consume(down, (size_t)(end - down->buf) + 4 + 9);
            return 0;
        }
        if (down->have == sizeof down->buf) return -1;
        ssize_t r = recv(down->fd, down->buf + down->have, sizeof down->buf - down->have, 0);
        if (r <= 0) return -1;
        down->have += (size_t)r;
    }
}

static void *worker(void *arg) {
    (void)arg;
    struct conn down = {.fd = connect_downstream()};
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (q_head == q_tail) pthread_cond_wait(&q_ready, &q_lock);
        struct conn *c = queue[q_head++ % 4096];
        pthread_mutex_unlock(&q_lock);
        ssize_t n = read_request(c);
        int ok = n > 0;
        if (ok) {
            conn_consume(c, (size_t)n);
            ok = call_inventory_service(&down) == 0 && respond(c->fd, 200, "ok\n", 3) == 0;
        }
        if (!ok) {
            close(c->fd);
            free(c);
            continue;
        }
        struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DOWNSTREAM-PORT\n", argv[0]); return 2; }
    signal(SIGPIPE, SIG_IGN);
    downstream_port = atoi(argv[1]);
    int lfd = listen_any(128);
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (int i = 0; i < WORKERS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) die("pthread_create");
    }
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                int fd = accept(lfd, NULL, NULL);
                if (fd < 0) continue;
                c = calloc(1, sizeof *c);
                if (!c) die("calloc");
                c->fd = fd;
                struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                continue;
            }
            pthread_mutex_lock(&q_lock);
            queue[q_tail++ % 4096] = c;
            pthread_cond_signal(&q_ready);
            pthread_mutex_unlock(&q_lock);
        }
    }
}
