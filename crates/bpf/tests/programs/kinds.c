/* Two kinds of threads, named kind-a and kind-b, block at the same place through
 * different callers: caller_a and caller_b each call wait_here, whose large frame
 * puts their return addresses far above where the threads block (nanosleep).
 *
 * Usage: kinds SLEEPS
 * Prints "ready", waits for a line on stdin, runs both threads (SLEEPS sleeps of
 * 1 ms each), prints "done" and waits for another line before exiting.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long sleeps;

__attribute__((noinline)) static int wait_here(int seed)
{
	volatile char frame[3000];
	struct timespec ts = { 0, 1000000 };

	memset((char *)frame, seed, sizeof frame);
	for (long i = 0; i < sleeps; i++)
		nanosleep(&ts, NULL);
	return frame[seed % sizeof frame];
}

__attribute__((noinline)) static int caller_a(void)
{
	return wait_here(1) + 1;
}

__attribute__((noinline)) static int caller_b(void)
{
	return wait_here(2) + 2;
}

static void *run_a(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kind-a");
	return (void *)(long)caller_a();
}

static void *run_b(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kind-b");
	return (void *)(long)caller_b();
}

int main(int argc, char **argv)
{
	char line[64];
	pthread_t a, b;

	if (argc != 2) {
		fprintf(stderr, "usage: kinds SLEEPS\n");
		return 2;
	}
	sleeps = atol(argv[1]);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	pthread_create(&a, NULL, run_a, NULL);
	pthread_create(&b, NULL, run_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return 0;
}
