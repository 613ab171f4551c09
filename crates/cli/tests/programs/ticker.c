/* A server-like test target for kiln run: 100 times a second it does a fixed amount of
 * work in fixed_work() and `units` of work in variable_work(), then sleeps until the next
 * tick. At 40 units variable_work is 80% of its CPU; at 10 it is 50% and the whole
 * program uses 60% less CPU: the A/B change kiln compare must see. A tick's work (about
 * a million multiply-adds) stays well under its 10 ms, so the program sleeps most of the
 * time even on a busy machine, as a server waiting for requests does.
 *
 * SIGUSR1 cuts the units to a quarter, SIGUSR2 restores them: a change of the target's work
 * a set-up command can make (kill -USR1 PID), as rabbitmqctl changes a broker's.
 *
 *   ticker UNITS [SECONDS]     (runs until killed when SECONDS is absent)
 */
#include <signal.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t quarter;

static void on_signal(int sig) { quarter = sig == SIGUSR1; }

static volatile unsigned long sink;

/* Each function spins in its own loop, so its samples are its own (self time). */
__attribute__((noinline)) void fixed_work(void) {
    unsigned long x = 1;
    for (long i = 0; i < 200000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void variable_work(long units) {
    unsigned long x = 3;
    for (long i = 0; i < units * 20000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 40;
    signal(SIGUSR1, on_signal);
    signal(SIGUSR2, on_signal);
    double seconds = argc > 2 ? atof(argv[2]) : 1e9;
    struct timespec next, start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    next = start;
    for (;;) {
        fixed_work();
        variable_work(quarter ? units / 4 : units);
        next.tv_nsec += 10 * 1000 * 1000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec += 1;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if ((double)(next.tv_sec - start.tv_sec) > seconds)
            return 0;
    }
}
