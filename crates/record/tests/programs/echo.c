/* A TCP echo over loopback for argv[1] seconds: one thread sends 64 bytes and waits for
 * them to come back, the other echoes them. Its time is in the kernel's network stack. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listener;

static int full(int fd, char *buf, int len, int send_it)
{
	int done = 0;
	while (done < len) {
		int n = send_it ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static void *server(void *arg)
{
	char buf[64];
	int fd = accept(listener, 0, 0);
	(void)arg;
	while (fd >= 0 && full(fd, buf, sizeof(buf), 0) == 0 && full(fd, buf, sizeof(buf), 1) == 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	struct timespec t0, t;
	pthread_t th;
	char buf[64];
	int fd, one = 1;
	long n = 0;

	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof(a)) || listen(listener, 1) ||
	    getsockname(listener, (struct sockaddr *)&a, &len))
		return 1;
	pthread_create(&th, 0, server, 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(buf, 'x', sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (full(fd, buf, sizeof(buf), 1) || full(fd, buf, sizeof(buf), 0))
			return 1;
		if ((++n & 255) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
				return 0;
		}
	}
}
