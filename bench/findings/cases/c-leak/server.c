/* A session table that never forgets: remember_session() allocates an 8 KiB session per
 * request, fills it and links it into a global list that nothing ever frees.
 * usage: server */
#include "mini_http.h"

struct session {
    struct session *next;
    char data[8192 - sizeof(struct session *)];
};

static struct session *sessions;
static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void remember_session(unsigned long id) {
    struct session *s = malloc(sizeof *s);
    if (!s) die("malloc");
    memset(s->data, (int)(id & 0xff), sizeof s->data);
    pthread_mutex_lock(&sessions_lock);
    s->next = sessions;
    sessions = s;
    pthread_mutex_unlock(&sessions_lock);
}

static void *serve(void *arg) {
    struct conn *c = arg;
    unsigned long id = (unsigned long)c->fd << 32;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        remember_session(id++);
        if (respond(c->fd, 200, "welcome\n", 8) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    serve_thread_per_connection(listen_any(128), serve);
}
