/* A ledger behind a spinlock: 16 connection threads; every request posts to the ledger
 * under one pthread_spinlock_t (pthread_spin_lock: it never sleeps), computing ~0.3 ms
 * while it holds it. The threads waiting for the lock spin on the CPUs the holder needs.
 * usage: server */
#include "mini_http.h"

static pthread_spinlock_t ledger_lock;
static volatile unsigned long balance = 17;

static __attribute__((noinline)) void apply_entry(void) {
    unsigned long x = balance;
    for (int i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    balance = x;
}

static __attribute__((noinline)) void post_entry(void) {
    pthread_spin_lock(&ledger_lock);
    apply_entry();
    pthread_spin_unlock(&ledger_lock);
    __asm__ volatile("" ::: "memory");
}

static int handle(int fd, size_t n) {
    (void)n;
    post_entry();
    return respond(fd, 200, "ok\n", 3);
}

int main(void) {
    pthread_spin_init(&ledger_lock, PTHREAD_PROCESS_PRIVATE);
    serve_each_request(listen_any(128), handle);
}
