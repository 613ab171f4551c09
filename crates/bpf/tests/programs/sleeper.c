/* Sleeps in nanosleep for known durations.
 *
 * Usage: sleeper SHORT_COUNT SHORT_US LONG_COUNT LONG_US
 * Prints "ready", waits for a line on stdin, does the short sleeps then the
 * long ones, prints "done" and waits for another line before exiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	char line[64];
	if (argc != 5) {
		fprintf(stderr, "usage: sleeper SHORT_COUNT SHORT_US LONG_COUNT LONG_US\n");
		return 2;
	}
	long sc = atol(argv[1]), su = atol(argv[2]), lc = atol(argv[3]), lu = atol(argv[4]);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (long i = 0; i < sc; i++)
		sleep_us(su);
	for (long i = 0; i < lc; i++)
		sleep_us(lu);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return 0;
}
