/*
 * bench/first_touch.c
 *		What a fresh process pays for its first touch of shared memory that
 *		another process filled already: the cost under every fresh backend's
 *		first join (its shared buffers, a shared image), PostgreSQL's own
 *		plans included.  Not part of the extension.
 *
 *   cc -O2 -o /tmp/first_touch bench/first_touch.c && /tmp/first_touch [MB]
 *
 * The parent fills MB (default 128) of shared anonymous memory, as the
 * postmaster's segment is; then three children each read one byte of every
 * 4 kB page, plainly, after MADV_POPULATE_READ (the kernel maps every page
 * in one call, no fault per page), and a second time.  Printed per child:
 * milliseconds and microseconds a page, and the minor faults counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long
minor_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* read one byte a page; returns the sum so that the reads stay */
static long
touch(const volatile char *p, size_t bytes)
{
	long		sum = 0;

	for (size_t i = 0; i < bytes; i += 4096)
		sum += p[i];
	return sum;
}

int
main(int argc, char **argv)
{
	size_t		bytes = (size_t) (argc > 1 ? atol(argv[1]) : 128) << 20;
	size_t		pages = bytes / 4096;
	char	   *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
	{
		perror("mmap");
		return 1;
	}
	memset(p, 1, bytes);
	printf("%zu MB, %zu pages of 4 kB, filled by the parent\n", bytes >> 20, pages);
	for (int populate = 0; populate < 2; populate++)
		for (int child = 0; child < 3; child++)
		{
			pid_t		pid;

			fflush(stdout);
			pid = fork();

			if (pid == 0)
			{
				long		f0 = minor_faults();
				double		t0 = now_ms(),
							t1,
							t2,
							t3;
				long		sum;

				if (populate && madvise(p, bytes, MADV_POPULATE_READ) != 0)
					perror("madvise(MADV_POPULATE_READ)");
				t1 = now_ms();
				sum = touch(p, bytes);
				t2 = now_ms();
				sum += touch(p, bytes);
				t3 = now_ms();
				printf("%-22s populate %6.1f ms, first touch %7.1f ms (%.2f us a page), again %5.1f ms, %ld faults (%ld)\n",
					   populate ? "after POPULATE_READ:" : "plain:", t1 - t0, t2 - t1,
					   (t2 - t1) * 1e3 / pages, t3 - t2, minor_faults() - f0, sum);
				fflush(stdout);
				_exit(0);
			}
			waitpid(pid, NULL, 0);
		}
	return 0;
}
