/* A target whose names are not UTF-8. Built as `aсервер-приложение`, its command name is
 * cut by the kernel to 15 bytes, inside the Cyrillic п (0xd0 0xbf): "aсервер-\xd0". One
 * thread names itself "spin\xff" (prctl(PR_SET_NAME)) and spins; another names itself
 * with terminal escapes (clear the screen, retitle the window) and sleeps; the main thread
 * sleeps.
 *
 *   badnames          (runs until killed)
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_work(void) {
    unsigned long x = sink + 1;
    for (long i = 0; i < 1000000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

static void *spin(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "spin\xff", 0, 0, 0);
    for (;;)
        spin_work();
    return 0;
}

static void *hostile(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "\x1b[2J\x1b]0;PWNED\x07", 0, 0, 0);
    for (;;)
        pause();
    return 0;
}

int main(void) {
    pthread_t t, h;
    if (pthread_create(&t, 0, spin, 0) != 0 || pthread_create(&h, 0, hostile, 0) != 0)
        return 1;
    for (;;)
        pause();
}
