/* Group commit on a timer: every request appends a record for a journal thread and waits
 * (a condition variable) until the journal has written it; the journal thread wakes every
 * 10 ms (usleep in flush_loop), writes what came since, and wakes the waiters. The
 * requests wait on a thread that sleeps.
 * usage: server */
#include "mini_http.h"
#include <fcntl.h>
#include <pthread.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static unsigned long appended, durable;
static int journal = -1;

static __attribute__((noinline)) void append_and_wait(void) {
    pthread_mutex_lock(&mu);
    unsigned long mine = ++appended;
    while (durable < mine)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void write_records(unsigned long n) {
    static char rec[128];
    memset(rec, 'r', sizeof rec);
    for (unsigned long i = 0; i < n; i++)
        if (write(journal, rec, sizeof rec) < 0)
            perror("journal");
    __asm__ volatile("" ::: "memory");
}

static void *flush_loop(void *arg) {
    (void)arg;
    unsigned long written = 0;
    for (;;) {
        usleep(10000);
        pthread_mutex_lock(&mu);
        unsigned long upto = appended;
        pthread_mutex_unlock(&mu);
        if (upto == written)
            continue;
        write_records(upto - written);
        written = upto;
        pthread_mutex_lock(&mu);
        durable = upto;
        pthread_cond_broadcast(&done);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static int handle(int fd, size_t n) {
    (void)n;
    append_and_wait();
    return respond(fd, 200, "ok\n", 3);
}

int main(void) {
    journal = open("/dev/null", O_WRONLY);
    pthread_t t;
    pthread_create(&t, NULL, flush_loop, NULL);
    serve_each_request(listen_any(128), handle);
}
