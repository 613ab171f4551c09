/* mmap-heavy: ROUNDS times, map_and_touch() maps 64 anonymous pages, touches each
 * (64 page faults) and unmaps them, so the counts of mmap, munmap and page-fault events
 * are known: ROUNDS, ROUNDS and 64 * ROUNDS from map_and_touch(). Usage: memhog ROUNDS */
#include <stdlib.h>
#include <sys/mman.h>

__attribute__((noinline)) void map_and_touch(size_t pages) {
    char *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(1);
    for (size_t i = 0; i < pages; i++) p[i * 4096] = (char)i;
    munmap(p, pages * 4096);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    for (long r = 0; r < rounds; r++) map_and_touch(64);
    return 0;
}
