/* Context-switch-heavy load: two threads bounce one byte over two pipes.
 * Every round trip blocks each thread once, so its rate is a direct measure
 * of what an off-CPU tracer costs per block and wake-up.
 *
 * Usage: pingpong WARMUP_S MEASURE_S
 * Prints "pid N", waits for a line on stdin (the tracer is attached), bounces
 * for WARMUP_S, then measures for MEASURE_S and prints "round_trips_per_s R".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile int stop;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *echo(void *arg)
{
	char c;
	(void)arg;
	while (read(ab[0], &c, 1) == 1)
		if (write(ba[1], &c, 1) != 1)
			break;
	return NULL;
}

static long bounce_until(double end)
{
	long n = 0;
	char c = 'x';
	while (now() < end) {
		for (int i = 0; i < 100; i++) {
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				exit(1);
		}
		n += 100;
	}
	return n;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (argc != 3) {
		fprintf(stderr, "usage: pingpong WARMUP_S MEASURE_S\n");
		return 2;
	}
	double warm = atof(argv[1]), measure = atof(argv[2]);
	if (pipe(ab) || pipe(ba))
		return 1;
	printf("pid %d\n", getpid());
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	pthread_create(&t, NULL, echo, NULL);
	bounce_until(now() + warm);
	double start = now();
	long n = bounce_until(start + measure);
	printf("round_trips_per_s %.0f\n", n / (now() - start));
	return 0;
}
