/* A block store whose one mutex is held around a disk read: every request takes
 * `store_lock` in lookup_block() and, under it, reads a 16 KiB block from the data file
 * with O_DIRECT (read_block_from_disk), so requests wait for each other's reads.
 * With --no-lock (c-disk-read) no lock is taken: each request waits for its own read.
 * usage: server DATA-FILE [--no-lock] */
#include "mini_http.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#define BLOCK (16 * 1024)

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static int data_fd;
static long nblocks;
static int no_lock;

static __attribute__((noinline)) uint64_t read_block_from_disk(long block, unsigned char *buf) {
    if (pread(data_fd, buf, BLOCK, (off_t)block * BLOCK) != BLOCK) die("pread");
    uint64_t sum = 0;
    for (int i = 0; i < BLOCK; i += 64) sum += buf[i];
    return sum;
}

static __attribute__((noinline)) uint64_t lookup_block(long block, unsigned char *buf) {
    if (no_lock) return read_block_from_disk(block, buf);
    pthread_mutex_lock(&store_lock);
    uint64_t sum = read_block_from_disk(block, buf);
    pthread_mutex_unlock(&store_lock);
    return sum;
}

static void *serve(void *arg) {
    struct conn *c = arg;
    unsigned char *buf = aligned_alloc(4096, BLOCK);
    unsigned seed = (unsigned)c->fd * 2654435761u;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        uint64_t sum = lookup_block(rand_r(&seed) % nblocks, buf);
        char body[64];
        int len = snprintf(body, sizeof body, "block sum %llu\n", (unsigned long long)sum);
        if (respond(c->fd, 200, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(buf);
    free(c);
    return NULL;
}

int main(int argc, char **argv) {
    no_lock = argc == 3 && strcmp(argv[2], "--no-lock") == 0;
    if (argc != 2 + no_lock) { fprintf(stderr, "usage: %s DATA-FILE [--no-lock]\n", argv[0]); return 2; }
    data_fd = open(argv[1], O_RDONLY | O_DIRECT);
    if (data_fd < 0) die(argv[1]);
    struct stat st;
    if (fstat(data_fd, &st) < 0) die("fstat");
    nblocks = st.st_size / BLOCK;
    if (nblocks < 1) { fprintf(stderr, "%s: smaller than one block\n", argv[1]); return 1; }
    serve_thread_per_connection(listen_any(128), serve);
}
