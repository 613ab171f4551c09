/* An order log that makes every request durable on its own: append_order() writes a
 * 512-byte record to the connection's log file and calls fdatasync(2) before answering.
 * usage: server LOG-DIR */
#include "mini_http.h"
#include <fcntl.h>

static const char *log_dir;

static __attribute__((noinline)) void append_order(int log_fd, unsigned long seq) {
    char rec[512];
    memset(rec, ' ', sizeof rec);
    int n = snprintf(rec, sizeof rec, "order %lu", seq);
    rec[n] = ' ';
    rec[sizeof rec - 1] = '\n';
    if (write_all(log_fd, rec, sizeof rec) < 0) die("write log");
    if (fdatasync(log_fd) < 0) die("fdatasync");
}

static void *serve(void *arg) {
    struct conn *c = arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/orders-%d-%ld.log", log_dir, c->fd, (long)pthread_self() % 100000);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
    if (log_fd < 0) die(path);
    unsigned long seq = 0;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        append_order(log_fd, ++seq);
        if (respond(c->fd, 200, "stored\n", 7) < 0) break;
    }
    close(log_fd);
    unlink(path);
    close(c->fd);
    free(c);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s LOG-DIR\n", argv[0]); return 2; }
    log_dir = argv[1];
    serve_thread_per_connection(listen_any(128), serve);
}
