/* A neighbour that burns one CPU until killed. */
int main(void) {
    volatile unsigned long x = 0;
    for (;;) x++;
}
