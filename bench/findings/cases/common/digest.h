/* A named unit of CPU work for the corpus's servers: `rounds` steps of a 64-bit LCG. */
#ifndef DIGEST_H
#define DIGEST_H
#include <stdint.h>
static __attribute__((noinline)) uint64_t compute_digest(uint64_t x, long rounds) {
    for (long i = 0; i < rounds; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}
#endif
