#include <stdlib.h>
#include <string.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf_hash(int n) { for (int i = 0; i < n; i++) sink = sink * 31 + i; }
__attribute__((noinline)) static void copy_buf(int n) { char a[4096], b[4096]; for (int i = 0; i < n; i++) { memset(a, i, sizeof a); memcpy(b, a, sizeof b); sink += b[i % 4096]; } }
__attribute__((noinline)) static void parse(int n) { leaf_hash(n * 2); copy_buf(n / 8); }
__attribute__((noinline)) static void render(int n) { leaf_hash(n); }
__attribute__((noinline)) static void work(int n) { parse(n); render(n); leaf_hash(n / 3); }
int main(int argc, char **argv) { int rounds = argc > 1 ? atoi(argv[1]) : 3000; for (int r = 0; r < rounds; r++) work(20000); return 0; }
