/* Sleeps N times for MS milliseconds in sleep_once(), writing to OUT, for each sleep,
 * CLOCK_MONOTONIC in nanoseconds read just before and just after it: "before after".
 * The off-CPU tests check that each recorded block lies inside one such interval.
 * Usage: sleeps N MS OUT */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__attribute__((noinline)) void sleep_once(long ms, FILE *out)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	unsigned long long before = now_ns(), after;
	nanosleep(&d, NULL);
	after = now_ns();
	fprintf(out, "%llu %llu\n", before, after);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int n = atoi(argv[1]);
	long ms = atol(argv[2]);
	FILE *out = fopen(argv[3], "w");
	if (!out)
		return 1;
	for (int i = 0; i < n; i++)
		sleep_once(ms, out);
	return fclose(out) != 0;
}
