/* A program run per request: every request renders its answer by running a helper
 * (`/bin/sh -c 'date +%s'`, as a server shelling out to a converter or a script does)
 * and waits for it to end. The server's own threads do little; the children take the
 * CPUs, and each request waits for its child.
 * usage: server */
#include "mini_http.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static __attribute__((noinline)) int render_with_helper(void) {
    char *argv[] = {"/bin/sh", "-c", "date +%s > /dev/null", NULL};
    pid_t pid;
    int st = -1;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0) return -1;
    waitpid(pid, &st, 0);
    __asm__ volatile("" ::: "memory");
    return st;
}

static int handle(int fd, size_t n) {
    (void)n;
    int st = render_with_helper();
    return st == 0 ? respond(fd, 200, "ok\n", 3) : respond(fd, 500, "helper failed\n", 14);
}

int main(void) { serve_each_request(listen_any(128), handle); }
