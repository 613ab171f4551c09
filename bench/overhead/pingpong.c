/* A context-switch-heavy target for bench/overhead: two threads bounce one byte over two
 * pipes as fast as they can (every round trip blocks each thread once), and the round
 * trips so far are kept in a file the benchmark maps (8 bytes, native order), so it can
 * divide the process's CPU time by the round trips of the same seconds.
 *
 * Usage: pingpong COUNTER_FILE     (runs until killed)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static int ab[2], ba[2];

static void *echo(void *arg)
{
	char c;

	(void)arg;
	while (read(ab[0], &c, 1) == 1)
		if (write(ba[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	volatile uint64_t *count;
	pthread_t t;
	char c = 'x';
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: pingpong COUNTER_FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 8) != 0) {
		perror(argv[1]);
		return 1;
	}
	count = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (count == MAP_FAILED || pipe(ab) || pipe(ba) || pthread_create(&t, NULL, echo, NULL)) {
		perror("pingpong");
		return 1;
	}
	for (;;) {
		for (int i = 0; i < 100; i++)
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
		*count += 100;
	}
}
