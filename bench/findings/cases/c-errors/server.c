/* A server whose backend check fails for a third of the requests: check_backend() says
 * no and the request is answered 503 at once. GET /stats answers its own counters
 * ("requests N errors M"), which it does not count as requests.
 * usage: server */
#include "mini_http.h"
#include "digest.h"

static unsigned long served, failed;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) int check_backend(unsigned long n) {
    return n % 3 != 0;
}

static void *serve(void *arg) {
    struct conn *c = arg;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        int stats = strncmp(c->buf, "GET /stats ", 11) == 0;
        conn_consume(c, (size_t)n);
        char body[96];
        int len, status = 200;
        pthread_mutex_lock(&count_lock);
        if (stats) {
            len = snprintf(body, sizeof body, "requests %lu errors %lu\n", served, failed);
        } else {
            unsigned long k = ++served;
            if (!check_backend(k)) { failed++; status = 503; }
            len = snprintf(body, sizeof body, status == 200 ? "ok\n" : "backend unavailable\n");
        }
        pthread_mutex_unlock(&count_lock);
        if (status == 200 && !stats) compute_digest((uint64_t)c->fd, 20000);
        if (respond(c->fd, status, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
