/* A syscall-bound loop: one-byte reads of /dev/zero and writes to /dev/null (what
 * `dd if=/dev/zero of=/dev/null bs=1` does), for argv[1] seconds. Nearly all of its time
 * is in the kernel's syscall path. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
	struct timespec t0, t;
	char c;
	long n = 0;

	if (in < 0 || out < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1)
			return 1;
		if ((++n & 4095) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
				return 0;
		}
	}
}
