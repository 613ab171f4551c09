/* A neighbour that burns one CPU until killed. */
#include <signal.h>

int main(void) {
    /* A script's background command starts with SIGINT ignored: take the default back. */
    signal(SIGINT, SIG_DFL);
    volatile unsigned long x = 0;
    for (;;) x++;
}
