/* A server that hands each request to one of 2 worker threads and busy-waits for the answer:
 * a connection's thread posts its job in its slot and spins in await_reply() (checking a
 * flag with the pause instruction, sched_yield(2) every 1,024 checks) until a worker has done
 * it; the workers spin the same way in next_job() looking for work (~50 us of CPU a job,
 * compute_digest). Nobody sleeps: waiting threads burn the CPUs the workers need.
 * usage: server */
#include "mini_http.h"
#include "digest.h"
#include <sched.h>

#define SLOTS 256
#define WORKERS 2

struct slot {
    int state; /* 0 free, 1 posted, 2 taken, 3 done */
    uint64_t in, out;
};

static struct slot slots[SLOTS];
static int next_slot;

/* One turn of a wait: pause, and every 1,024 turns give the CPU away. */
static void relax(unsigned *spins) {
    __builtin_ia32_pause();
    if (++*spins % 1024 == 0) sched_yield();
}

static __attribute__((noinline)) struct slot *next_job(void) {
    unsigned spins = 0;
    for (;;) {
        for (int i = 0; i < SLOTS; i++) {
            int posted = 1;
            if (__atomic_compare_exchange_n(&slots[i].state, &posted, 2, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
                return &slots[i];
        }
        relax(&spins);
    }
}

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        struct slot *s = next_job();
        s->out = compute_digest(s->in, 40000);
        __atomic_store_n(&s->state, 3, __ATOMIC_RELEASE);
    }
    return NULL;
}

static __attribute__((noinline)) uint64_t await_reply(struct slot *s) {
    unsigned spins = 0;
    while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != 3) relax(&spins);
    uint64_t out = s->out;
    __atomic_store_n(&s->state, 0, __ATOMIC_RELEASE);
    return out;
}

static void *serve(void *arg) {
    struct conn *c = arg;
    struct slot *s = &slots[__atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % SLOTS];
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        s->in = (uint64_t)c->fd;
        __atomic_store_n(&s->state, 1, __ATOMIC_RELEASE);
        char body[64];
        int len = snprintf(body, sizeof body, "%llu\n", (unsigned long long)await_reply(s));
        if (respond(c->fd, 200, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(void) {
    for (int i = 0; i < WORKERS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) die("pthread_create");
    }
    serve_thread_per_connection(listen_any(128), serve);
}
