/* A small HTTP/1.1 server with one planted cause of slowness, chosen by its first
 * argument, for the findings tests:
 *
 *   planted MODE PORT [DIR]
 *
 *   lock    a thread per connection; every request holds one mutex while it works
 *   locksleep a thread per connection; every request holds one mutex over a 1 ms sleep
 *           (a blocking call made under a lock)
 *   work    a thread per connection; every request works on the CPU (no lock)
 *   single  one thread (epoll) serves every connection, working per request, with a
 *           listen backlog of 4
 *   fsync   a thread per connection; every request appends to DIR/log and fdatasyncs
 *   churn   a thread per connection; every request mallocs, touches and frees 1 MiB
 *           (above the mmap threshold, which mallopt pins)
 *   nagle   a thread per connection; each response is written in two writes, without
 *           TCP_NODELAY (the delayed-ACK stall)
 *   nodelay as nagle, with TCP_NODELAY
 *   spin    a thread per connection; every request holds one spin lock while it works
 *   sleep   a thread per connection; every request sleeps 5 ms
 *   log     a thread per connection; every request writes a 2 KiB line to standard
 *           error (a pipe whose reader sets the pace)
 *   dbpool  a thread per connection; every request takes one of two "connections" from
 *           a pool (a condition variable while none is free) and holds it 2 ms; a
 *           refresher thread (as in refresh) sleeps beside them
 *   close   a thread per connection; every response says `Connection: close` and the
 *           connection is closed after it (keep-alive off)
 *   spawn   a thread per connection; every request runs a program (`/bin/sh -c 'exit 0'`)
 *           and waits for it to end
 *   sigwait a thread per connection; every request waits 3 ms for a signal that never
 *           comes (sigtimedwait): a wait of a kind no rule names
 *   refresh as work, and a thread of its own that sleeps 100 ms at a time and touches
 *           no connection (a periodic refresher): its sleep is in no request's path
 *   stall   a thread per connection; every request reads a table under a mutex, which a
 *           snapshot thread holds 60 ms every 500 ms (the tail waits, the median not)
 *   compact as stall, the thread working on the CPU under the lock instead of asleep
 *   checkpoint a thread per connection; every request works a little, and the first
 *           request 500 ms after the last checkpoint writes 4 MiB to DIR/checkpoint and
 *           fdatasyncs it before answering (the slowest requests wait for the disk, in no
 *           lock: the median does not)
 *   rebuild as checkpoint, that request rebuilding on the CPU (some 60 ms) instead
 *   commit  a thread per connection; every request appends a record for a committer
 *           thread and waits (a condition variable) until the committer has written it
 *           to DIR/journal and fdatasynced it (group commit: the requests wait on a
 *           thread that waits on the disk)
 *   linger  as commit, the committer writing (no sync) every 10 ms by its clock: the
 *           requests wait on a thread that sleeps
 *   handoff as commit, the committer working on the CPU for each record instead of
 *           writing it (one thread does every request's work)
 *   cache   a thread per connection; every request reads 64 KiB at a random page of
 *           DIR/data (pread): a file larger than the cache its cgroup may keep is read
 *           from the disk
 *
 * It prints "ready PORT" once listening. Built by the tests with
 * cc -O2 -g -fno-omit-frame-pointer -fno-inline -pthread. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *mode;
static int log_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t spin;
static volatile unsigned long sink;

static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\n";
static const char BODY[] = "ok";
static const char CLOSE_HEAD[] =
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";

/* CPU work of about `units` × a few µs. */
static void work(int units) {
	unsigned long x = sink;
	for (int i = 0; i < units * 2000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void locked_work(void) {
	pthread_mutex_lock(&lock);
	work(20);
	pthread_mutex_unlock(&lock);
}

static void locked_sleep(void) {
	pthread_mutex_lock(&lock);
	usleep(1000);
	pthread_mutex_unlock(&lock);
}

static void spun_work(void) {
	pthread_spin_lock(&spin);
	work(20);
	pthread_spin_unlock(&spin);
}

static void append_and_sync(void) {
	char line[512];
	memset(line, 'x', sizeof line - 1);
	line[sizeof line - 1] = '\n';
	if (write(log_fd, line, sizeof line) < 0 || fdatasync(log_fd) < 0)
		perror("log");
}

static void churn(void) {
	size_t n = 1 << 20;
	char *p = malloc(n);
	if (!p)
		return;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (char)i;
	sink += (unsigned char)p[n / 2];
	free(p);
}

/* A pool of two "database connections": a request takes one (waiting on a condition
 * variable until one is free), holds it 2 ms, and gives it back. */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static int pool_free = 2;

static void acquire_conn(void) {
	pthread_mutex_lock(&pool_mu);
	while (pool_free == 0)
		pthread_cond_wait(&pool_cv, &pool_mu);
	pool_free--;
	pthread_mutex_unlock(&pool_mu);
}

static void release_conn(void) {
	pthread_mutex_lock(&pool_mu);
	pool_free++;
	pthread_cond_signal(&pool_cv);
	pthread_mutex_unlock(&pool_mu);
}

static void query_db(void) {
	acquire_conn();
	usleep(2000);
	release_conn();
}

/* One 2 KiB line per request on standard error: whatever reads it sets the pace. */
static void log_request(void) {
	char line[2048];
	memset(line, 'l', sizeof line - 1);
	line[sizeof line - 1] = '\n';
	if (write(2, line, sizeof line) < 0)
		perror("log");
}

extern char **environ;

/* Runs a program for the request and waits for it, as a server shelling out does. */
static void run_helper(void) {
	char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
	pid_t pid;
	int st;
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0)
		waitpid(pid, &st, 0);
}

/* A periodic refresher: sleeps, then a little work, forever. */
static void *refresher(void *arg) {
	(void)arg;
	for (;;) {
		usleep(100000);
		work(1);
	}
	return NULL;
}

/* A table its requests read under a lock, which a snapshot thread holds 60 ms every
 * 500 ms (as a periodic dump or compaction does): the requests that come then wait. */
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

static void read_table(void) {
	pthread_mutex_lock(&table_mu);
	work(2);
	pthread_mutex_unlock(&table_mu);
}

static void *snapshotter(void *arg) {
	(void)arg;
	for (;;) {
		usleep(440000);
		pthread_mutex_lock(&table_mu);
		usleep(60000);
		pthread_mutex_unlock(&table_mu);
	}
	return NULL;
}

/* As the snapshotter, working on the CPU under the lock (some 60 ms) instead of asleep. */
static void *compactor(void *arg) {
	(void)arg;
	for (;;) {
		usleep(440000);
		pthread_mutex_lock(&table_mu);
		work(22000);
		pthread_mutex_unlock(&table_mu);
	}
	return NULL;
}

/* The first request 500 ms after the last one does the periodic work inline: a 4 MiB
 * checkpoint written and synced (checkpoint), or some 60 ms on the CPU (rebuild). */
static int checkpoint_fd = -1;
static long long last_ns;

static void write_checkpoint(void) {
	static char chunk[1 << 20];
	memset(chunk, 'c', sizeof chunk);
	if (lseek(checkpoint_fd, 0, SEEK_SET) < 0)
		perror("checkpoint");
	for (int i = 0; i < 32; i++)
		if (write(checkpoint_fd, chunk, sizeof chunk) < 0)
			perror("checkpoint");
	if (fdatasync(checkpoint_fd) < 0)
		perror("checkpoint");
}

static void rebuild_index(void) {
	for (int pass = 0; pass < 4; pass++)
		work(5500);
}

static void maybe_periodic(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	long long last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	if (now - last < 500000000LL ||
	    !__atomic_compare_exchange_n(&last_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (!strcmp(mode, "checkpoint"))
		write_checkpoint();
	else
		rebuild_index();
}

/* Group commit: requests append a record to the batch and wait until a committer has
 * made it durable (commit: written and fdatasynced as soon as there is one; linger:
 * written every 10 ms, as a batching producer's linger does). */
static pthread_mutex_t batch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t batch_filled = PTHREAD_COND_INITIALIZER;
static pthread_cond_t batch_done = PTHREAD_COND_INITIALIZER;
static unsigned long batch_appended, batch_durable;
static int journal_fd = -1;

static void wait_for_commit(void) {
	pthread_mutex_lock(&batch_mu);
	unsigned long mine = ++batch_appended;
	pthread_cond_signal(&batch_filled);
	while (batch_durable < mine)
		pthread_cond_wait(&batch_done, &batch_mu);
	pthread_mutex_unlock(&batch_mu);
}

static void write_batch(unsigned long records) {
	static char rec[256];
	if (!strcmp(mode, "handoff")) {
		for (unsigned long i = 0; i < records; i++)
			work(20);
		return;
	}
	memset(rec, 'r', sizeof rec);
	for (unsigned long i = 0; i < records; i++)
		if (write(journal_fd, rec, sizeof rec) < 0)
			perror("journal");
	if (!strcmp(mode, "commit") && fdatasync(journal_fd) < 0)
		perror("journal");
}

static void *committer(void *arg) {
	(void)arg;
	unsigned long done = 0;
	for (;;) {
		if (!strcmp(mode, "linger"))
			usleep(10000);
		pthread_mutex_lock(&batch_mu);
		while (batch_appended == done)
			pthread_cond_wait(&batch_filled, &batch_mu);
		unsigned long upto = batch_appended;
		pthread_mutex_unlock(&batch_mu);
		write_batch(upto - done);
		done = upto;
		pthread_mutex_lock(&batch_mu);
		batch_durable = upto;
		pthread_cond_broadcast(&batch_done);
		pthread_mutex_unlock(&batch_mu);
	}
	return NULL;
}

/* DIR/data, read by the cache mode. */
static int data_fd = -1;
static off_t data_pages;

/* Reads 64 KiB at a random page of DIR/data. */
static void read_block(void) {
	static __thread unsigned seed;
	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)(unsigned long)&seed;
	char buf[65536];
	off_t at = (off_t)((unsigned long)rand_r(&seed) % (unsigned long)(data_pages - 16)) * 4096;
	if (pread(data_fd, buf, sizeof buf, at) < 0)
		perror("pread");
	sink += (unsigned char)buf[0];
}

/* Waits 3 ms for SIGUSR2 (blocked in every thread, never sent). */
static void await_signal(void) {
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	struct timespec ts = {0, 3000000};
	sigtimedwait(&s, NULL, &ts);
}

static void handle(void) {
	if (!strcmp(mode, "log"))
		log_request();
	else if (!strcmp(mode, "dbpool"))
		query_db();
	else if (!strcmp(mode, "lock"))
		locked_work();
	else if (!strcmp(mode, "locksleep"))
		locked_sleep();
	else if (!strcmp(mode, "work") || !strcmp(mode, "single") || !strcmp(mode, "refresh"))
		work(20);
	else if (!strcmp(mode, "fsync"))
		append_and_sync();
	else if (!strcmp(mode, "churn"))
		churn();
	else if (!strcmp(mode, "spin"))
		spun_work();
	else if (!strcmp(mode, "sleep"))
		usleep(5000);
	else if (!strcmp(mode, "spawn"))
		run_helper();
	else if (!strcmp(mode, "sigwait"))
		await_signal();
	else if (!strcmp(mode, "cache"))
		read_block();
	else if (!strcmp(mode, "stall") || !strcmp(mode, "compact"))
		read_table();
	else if (!strcmp(mode, "checkpoint") || !strcmp(mode, "rebuild")) {
		work(2);
		maybe_periodic();
	} else if (!strcmp(mode, "commit") || !strcmp(mode, "linger") || !strcmp(mode, "handoff")) {
		work(2);
		wait_for_commit();
	}
}

/* Writes the response: in two writes for nagle and nodelay, else in one. */
static int respond(int c) {
	if (!strcmp(mode, "nagle") || !strcmp(mode, "nodelay")) {
		if (write(c, HEAD, sizeof HEAD - 1) < 0)
			return -1;
		return write(c, BODY, sizeof BODY - 1) < 0 ? -1 : 0;
	}
	if (!strcmp(mode, "close")) {
		char all[sizeof CLOSE_HEAD + sizeof BODY];
		memcpy(all, CLOSE_HEAD, sizeof CLOSE_HEAD - 1);
		memcpy(all + sizeof CLOSE_HEAD - 1, BODY, sizeof BODY - 1);
		return write(c, all, sizeof CLOSE_HEAD - 1 + sizeof BODY - 1) < 0 ? -1 : 0;
	}
	char all[sizeof HEAD + sizeof BODY];
	memcpy(all, HEAD, sizeof HEAD - 1);
	memcpy(all + sizeof HEAD - 1, BODY, sizeof BODY - 1);
	return write(c, all, sizeof HEAD - 1 + sizeof BODY - 1) < 0 ? -1 : 0;
}

/* Requests end at an empty line; bodies are not expected. Returns how many whole
 * requests `buf` holds, moving what is left to its start. */
static int requests_in(char *buf, size_t *len) {
	int n = 0;
	char *end;
	while ((end = memmem(buf, *len, "\r\n\r\n", 4))) {
		size_t used = (size_t)(end + 4 - buf);
		memmove(buf, buf + used, *len - used);
		*len -= used;
		n++;
	}
	return n;
}

static void *serve(void *arg) {
	int c = (int)(long)arg;
	char buf[8192];
	size_t len = 0;
	if (!strcmp(mode, "nodelay")) {
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	for (;;) {
		ssize_t r = read(c, buf + len, sizeof buf - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		for (int n = requests_in(buf, &len); n > 0; n--) {
			handle();
			if (respond(c) < 0 || !strcmp(mode, "close"))
				goto out;
		}
		if (len == sizeof buf)
			break;
	}
out:
	close(c);
	return NULL;
}

struct conn {
	int fd;
	size_t len;
	char buf[8192];
};

static void single(int s) {
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			struct conn *k = evs[i].data.ptr;
			if (!k) {
				/* One connection per wake-up: the backlog fills while requests work. */
				int c = accept(s, NULL, NULL);
				if (c < 0)
					continue;
				k = calloc(1, sizeof *k);
				k->fd = c;
				struct epoll_event e = {.events = EPOLLIN, .data.ptr = k};
				epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
				continue;
			}
			ssize_t r = read(k->fd, k->buf + k->len, sizeof k->buf - k->len);
			if (r <= 0) {
				close(k->fd);
				free(k);
				continue;
			}
			k->len += (size_t)r;
			for (int m = requests_in(k->buf, &k->len); m > 0; m--) {
				handle();
				respond(k->fd);
			}
		}
	}
}

/* DIR/NAME opened for writing (created, with `flags` added); -1, said, when it cannot be. */
static int open_in(const char *dir, const char *name, int flags) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0600);
	if (fd < 0)
		perror(path);
	return fd;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: planted MODE PORT [DIR]\n");
		return 2;
	}
	mode = argv[1];
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	/* A client that goes while its answer is written (a load stopping, or a connection
	 * reset as the load's phase changes) must not end the server: the write fails with
	 * EPIPE instead of SIGPIPE killing it. */
	signal(SIGPIPE, SIG_IGN);
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	const char *dir = argc > 3 ? argv[3] : ".";
	if (!strcmp(mode, "fsync") && (log_fd = open_in(dir, "log", O_APPEND)) < 0)
		return 1;
	if (!strcmp(mode, "checkpoint") && (checkpoint_fd = open_in(dir, "checkpoint", 0)) < 0)
		return 1;
	if (!strcmp(mode, "cache")) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/data", dir);
		if ((data_fd = open(path, O_RDONLY)) < 0 || fstat(data_fd, &st) < 0 ||
		    st.st_size < 1 << 20) {
			perror(path);
			return 1;
		}
		data_pages = st.st_size / 4096;
	}
	if (!strcmp(mode, "commit") || !strcmp(mode, "linger") || !strcmp(mode, "handoff")) {
		if ((journal_fd = open_in(dir, "journal", O_APPEND)) < 0)
			return 1;
		pthread_t t;
		pthread_create(&t, NULL, committer, NULL);
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("bind");
		return 1;
	}
	socklen_t al = sizeof a;
	getsockname(s, (struct sockaddr *)&a, &al);
	listen(s, !strcmp(mode, "single") ? 4 : 128);
	printf("ready %d\n", ntohs(a.sin_port));
	fflush(stdout);
	if (!strcmp(mode, "refresh") || !strcmp(mode, "dbpool") || !strcmp(mode, "stall") ||
	    !strcmp(mode, "compact")) {
		void *(*f)(void *) = !strcmp(mode, "stall")     ? snapshotter
				     : !strcmp(mode, "compact") ? compactor
								: refresher;
		pthread_t r;
		pthread_create(&r, NULL, f, NULL);
	}
	if (!strcmp(mode, "single")) {
		single(s);
		return 0;
	}
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			continue;
		pthread_t t;
		pthread_create(&t, NULL, serve, (void *)(long)c);
		pthread_detach(t);
	}
}
