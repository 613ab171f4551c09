/* A tile server: every request reads one 64 KiB tile at a random place of a tiles file
 * (read_tile, pread) and answers its first byte. Fast while the file's pages stay in the
 * page cache; its cgroup's memory limit decides whether they can.
 * usage: server TILES-FILE */
#include "mini_http.h"
#include <fcntl.h>
#include <sys/stat.h>

static int tiles_fd;
static unsigned long tiles_pages;

static __attribute__((noinline)) unsigned char read_tile(unsigned *seed) {
    char tile[64 * 1024];
    off_t at = (off_t)((unsigned long)rand_r(seed) % (tiles_pages - 16)) * 4096;
    if (pread(tiles_fd, tile, sizeof tile, at) < 0) die("pread");
    return (unsigned char)tile[0];
}

static void *serve(void *arg) {
    struct conn *c = arg;
    unsigned seed = (unsigned)c->fd * 2654435761u;
    ssize_t n;
    while ((n = read_request(c)) > 0) {
        conn_consume(c, (size_t)n);
        char body[16];
        int len = snprintf(body, sizeof body, "%u\n", read_tile(&seed));
        if (respond(c->fd, 200, body, (size_t)len) < 0) break;
    }
    close(c->fd);
    free(c);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) die("usage: server TILES-FILE");
    struct stat st;
    if ((tiles_fd = open(argv[1], O_RDONLY)) < 0 || fstat(tiles_fd, &st) < 0) die(argv[1]);
    tiles_pages = (unsigned long)st.st_size / 4096;
    if (tiles_pages < 256) die("the tiles file is too small");
    serve_thread_per_connection(listen_any(128), serve);
}
