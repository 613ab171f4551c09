/* Threads contend on one pthread mutex, each holding it while sleeping.
 *
 * Usage: mutex THREADS ITERATIONS HOLD_US
 * Prints "ready" and waits for a line on stdin before starting (so the test
 * can attach first), prints "elapsed_ns N"
 * and "lifetimes_ns N" (the workers' lifetimes added up) when all threads are
 * done, then waits for another line before exiting (so /proc/PID/maps stays
 * readable).
 *
 * Each iteration takes the lock through lock_via_a() or lock_via_b(), two
 * functions called from the same place: a frame-pointer walk that skips the
 * caller of pthread_mutex_lock cannot tell them apart; kiln's caller hash must.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long iterations, hold_us;

static void hold(void)
{
	struct timespec ts = { hold_us / 1000000, (hold_us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void lock_via_a(void)
{
	pthread_mutex_lock(&lock);
	hold();
	pthread_mutex_unlock(&lock);
	__asm__ volatile("" ::: "memory"); /* keep the call above a real call */
}

__attribute__((noinline)) void lock_via_b(void)
{
	pthread_mutex_lock(&lock);
	hold();
	pthread_mutex_unlock(&lock);
	__asm__ volatile("" ::: "memory");
}

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static long lifetimes_ns; /* sum over workers of (exit - start) */

static void *worker(void *arg)
{
	long idx = (long)arg;
	long start = now_ns();
	pthread_setname_np(pthread_self(), "kiln-worker");
	for (long i = 0; i < iterations; i++) {
		/* Odd threads start with b: the threads that find the lock taken
		 * on their first call wait through both functions. */
		void (*f)(void) = ((i + idx) & 1) ? lock_via_b : lock_via_a;
		f();
	}
	__atomic_add_fetch(&lifetimes_ns, now_ns() - start, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];
	if (argc != 4) {
		fprintf(stderr, "usage: mutex THREADS ITERATIONS HOLD_US\n");
		return 2;
	}
	int n = atoi(argv[1]);
	iterations = atol(argv[2]);
	hold_us = atol(argv[3]);
	pthread_t t[64];
	if (n < 1 || n > 64)
		return 2;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	long start = now_ns();
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(long)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("elapsed_ns %ld lifetimes_ns %ld\n", now_ns() - start, lifetimes_ns);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return 0;
}
