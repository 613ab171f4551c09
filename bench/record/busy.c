/* A busy multi-threaded CPU workload for the recorder benchmarks: THREADS threads run
 * a three-level call tree (level1 -> level2 -> leaf_a / leaf_b) for SECONDS and the
 * program prints the total number of work units per second on stdout (the throughput
 * the overhead benchmark compares). Usage: busy SECONDS [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf_a(unsigned long x) {
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

__attribute__((noinline)) unsigned long leaf_b(unsigned long x) {
    for (int i = 0; i < 1000; i++) x = (x ^ (x >> 13)) * 0x9e3779b97f4a7c15UL;
    return x;
}

__attribute__((noinline)) unsigned long level2(unsigned long x) { return leaf_a(x) ^ leaf_b(x); }
__attribute__((noinline)) unsigned long level1(unsigned long x) { return level2(x) + 1; }

static void *worker(void *arg) {
    unsigned long *units = arg, x = (unsigned long)arg;
    double end = now() + seconds;
    while (now() < end) {
        for (int k = 0; k < 100; k++) x = level1(x);
        *units += 100;
    }
    return (void *)(x & 1);
}

int main(int argc, char **argv) {
    seconds = argc > 1 ? atof(argv[1]) : 5;
    int n = argc > 2 ? atoi(argv[2]) : 2;
    pthread_t t[64];
    unsigned long units[64] = {0};
    if (n < 1 || n > 64) return 2;
    double start = now();
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, &units[i]);
    unsigned long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        total += units[i];
    }
    printf("%.0f\n", total / (now() - start));
    return 0;
}
