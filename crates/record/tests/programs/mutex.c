/* Four threads contend on one pthread mutex, each holding it across a 2 ms sleep in
 * hold_lock(): at any time one thread sleeps (nanosleep) and the others wait for the
 * lock (futex), all under worker(). Usage: mutex SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double seconds;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void hold_lock(void) {
    pthread_mutex_lock(&lock);
    usleep(2000);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void *worker(void *arg) {
    double end = *(double *)arg;
    while (now() < end) hold_lock();
    return NULL;
}

int main(int argc, char **argv) {
    seconds = argc > 1 ? atof(argv[1]) : 1.0;
    double end = now() + seconds;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, &end);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
