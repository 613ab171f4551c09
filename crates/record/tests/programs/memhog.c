/* mmap-heavy: maps, touches (page faults) and unmaps anonymous memory in a loop from
 * map_and_touch(), for the mmap / munmap / page-faults events. Usage: memhog SECONDS */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

__attribute__((noinline)) void map_and_touch(size_t pages) {
    char *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(1);
    for (size_t i = 0; i < pages; i++) p[i * 4096] = (char)i;
    munmap(p, pages * 4096);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    do {
        map_and_touch(64);
        clock_gettime(CLOCK_MONOTONIC, &n);
    } while ((n.tv_sec - s.tv_sec) + (n.tv_nsec - s.tv_nsec) / 1e9 < secs);
    return 0;
}
