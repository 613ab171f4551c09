/*
 * kiln's demo workload: known hot functions on named threads.
 *
 * hot_a gets two thirds of each thread's loop and hot_b one third, both under
 * dispatch -> recurse, so a profile of this program has a known shape. Thread
 * names carry a space, a colon and a leading parenthesis, as real programs'
 * do. Every 64th iteration maps and unmaps memory (syscall tracepoints) and
 * sleeps briefly (scheduler tracepoints).
 *
 * Build: cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread workload.c -o workload
 * Run:   ./workload SECONDS [THREADS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static double deadline;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not a leaf (it calls keep), so it sets up a frame pointer like its callers. */
__attribute__((noinline)) void keep(uint64_t x) { sink += x & 1; }

__attribute__((noinline)) uint64_t spin(uint64_t n) {
    uint64_t x = n;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    keep(x);
    return x;
}

__attribute__((noinline)) uint64_t hot_a(void) { return spin(200000) + 1; }
__attribute__((noinline)) uint64_t hot_b(void) { return spin(100000) + 1; }

__attribute__((noinline)) uint64_t dispatch(int i) {
    uint64_t r = hot_a();
    r += hot_b();
    if (i % 64 == 0) {
        void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            memset(p, 1, 1 << 16); /* page faults */
            munmap(p, 1 << 20);
        }
        usleep(200);
    }
    return r;
}

__attribute__((noinline)) uint64_t recurse(int depth, int i) {
    if (depth == 0)
        return dispatch(i);
    return recurse(depth - 1, i) + 1;
}

static void *worker(void *arg) {
    const char *name = arg;
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; now() < deadline; i++)
        sink += recurse(3, i);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    static char *names[] = {"worker 1", "w:2", "(paren", "worker-4"};
    if (threads < 1)
        threads = 1;
    if (threads > 4)
        threads = 4;
    deadline = now() + secs;
    pthread_t t[4];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, names[i]);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)(sink & 1));
    return 0;
}
