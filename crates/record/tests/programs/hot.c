/* Two hot functions with a known split of the work: hot_a does twice the iterations
 * of hot_b (same loop body), so about 2/3 of on-CPU samples land in hot_a and 1/3 in hot_b, both called
 * from work() from main(). Built by the tests with and without frame pointers.
 * One work() call lasts about 100 ms here, many sampling periods: a cycle near a
 * multiple of the period would alias with it (at 200,000 and 100,000 iterations a call
 * took 125 us, an eighth of the 999 Hz period, and one run gave hot_a 77%).
 * Usage: hot SECONDS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void hot_a(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * i;
}

__attribute__((noinline)) void hot_b(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * i;
}

__attribute__((noinline)) void work(void) {
    hot_a(160000000);
    hot_b(80000000);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    do {
        work();
        clock_gettime(CLOCK_MONOTONIC, &n);
    } while ((n.tv_sec - s.tv_sec) + (n.tv_nsec - s.tv_nsec) / 1e9 < secs);
    return 0;
}
