/* Lock contention with a known waker: the "holder" thread takes a mutex, lets the
 * "waiter" threads start (they block on the mutex), does slow work under the lock in
 * hold_and_work() and releases it there, waking a waiter. So a waiter's block ends
 * with a wake-up from hold_and_work(). Usage: wakers WAITERS WORK_MS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static long work_ms;
static volatile unsigned long sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void slow_work(void)
{
	double end = now_ms() + work_ms;
	while (now_ms() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

__attribute__((noinline)) void hold_and_work(int waiters)
{
	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&started);
	/* Let the waiters reach the lock and block on it (and a recorder that started
	 * this program read its code's addresses since its exec). */
	struct timespec d = { 0, 200 * 1000000L };
	nanosleep(&d, NULL);
	slow_work();
	pthread_mutex_unlock(&lock);
	(void)waiters;
}

static void *holder(void *arg)
{
	pthread_setname_np(pthread_self(), "holder");
	hold_and_work((int)(long)arg);
	return NULL;
}

__attribute__((noinline)) void wait_for_lock(void)
{
	pthread_mutex_lock(&lock);
	sink++;
	pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	pthread_barrier_wait(&started);
	wait_for_lock();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	work_ms = argc > 2 ? atol(argv[2]) : 50;
	pthread_t h, w[64];
	if (n < 1 || n > 64)
		return 2;
	pthread_barrier_init(&started, NULL, n + 1);
	pthread_create(&h, NULL, holder, (void *)(long)n);
	for (int i = 0; i < n; i++)
		pthread_create(&w[i], NULL, waiter, NULL);
	pthread_join(h, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(w[i], NULL);
	return 0;
}
