/* Grows its heap with sbrk() in grow(): 5 times 1 MiB, then 3 times 4 KiB, and
 * shrinks it once by 4 KiB, so the bytes a brk profile must show under grow() are
 * known: 5 MiB + 12 KiB (a shrink weighs nothing). No malloc, no stdio. */
#include <unistd.h>

__attribute__((noinline)) int grow(long bytes)
{
	return sbrk(bytes) == (void *)-1;
}

int main(void)
{
	int failed = 0;
	for (int i = 0; i < 5; i++)
		failed |= grow(1 << 20);
	for (int i = 0; i < 3; i++)
		failed |= grow(4096);
	failed |= grow(-4096);
	return failed;
}
