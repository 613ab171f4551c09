/* A price cache behind a read-write lock: every request takes the read lock and looks a
 * price up (a few hundred nanoseconds); a rebuilder thread takes the write lock once a
 * second and recomputes the whole table under it (some 80 ms of CPU; the writer goes first once it waits). Requests that come
 * during a rebuild wait for it: the median never sees the lock, the tail does.
 * usage: server */
#include "mini_http.h"
#include <stdint.h>

#define PRICES 4096

static pthread_rwlock_t cache_lock;
static uint64_t prices[PRICES];

static __attribute__((noinline)) uint64_t price_of(unsigned item) {
    pthread_rwlock_rdlock(&cache_lock);
    uint64_t p = prices[item % PRICES];
    pthread_rwlock_unlock(&cache_lock);
    return p;
}

/* Recomputes every price: a long multiply-add chain per entry, on the CPU. */
static __attribute__((noinline)) void rebuild_prices(uint64_t round) {
    for (unsigned i = 0; i < PRICES; i++) {
        uint64_t x = round * PRICES + i;
        for (int k = 0; k < 16000; k++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        prices[i] = x;
    }
}

static void *rebuilder(void *arg) {
    (void)arg;
    for (uint64_t round = 1;; round++) {
        usleep(1000000);
        pthread_rwlock_wrlock(&cache_lock);
        rebuild_prices(round);
        pthread_rwlock_unlock(&cache_lock);
    }
    return NULL;
}

static int handle(int fd, size_t n) {
    static __thread unsigned seed;
    char body[64];
    int len = snprintf(body, sizeof body, "price %llu\n", (unsigned long long)price_of(rand_r(&seed) + (unsigned)n));
    return respond(fd, 200, body, (size_t)len);
}

int main(void) {
    /* The writer goes first once it waits (else readers that never stop starve it). */
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&cache_lock, &a);
    rebuild_prices(0);
    pthread_t t;
    pthread_create(&t, NULL, rebuilder, NULL);
    pthread_setname_np(t, "rebuilder");
    serve_each_request(listen_any(128), handle);
}
