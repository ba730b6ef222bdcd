/* The lab's harness for the ring all-reduce (lesson 09). It runs as root
 * before the learner's ranks and is the only one who knows the inputs:
 *
 *   argv: RANKS REPS SIZE...   (element counts of float32 vectors)
 *
 * It writes $LAB_PEER_DIR/job ("RANKS REPS NSIZES SIZE...") and, per size
 * k and rank r, in-K-R: SIZE random whole-numbered floats (so any order of
 * summation gives the same exact sum), from a seed drawn for this run.
 * For every step j (size j / REPS, repetition j % REPS) it waits until
 * every rank has created arrive-J-R, creates go-J, and times until every
 * rank has created done-J-R (looked for every millisecond); rxe's sent_pkts are read at both ends. Each
 * rank then writes its result to out-J-R, which the harness compares
 * element by element with the sum it computed, when the next step starts
 * or at the end. When its standard input closes (the lab does that once
 * the ranks are over) it reports, one fact a line:
 *
 *   step J size N: US us sent_pkts P [done before go]
 *   size N: algbw A GB/s busbw B GB/s (median of M runs, US us)
 *   first difference: size N rank R index I want W got G
 *   missing: size N rank R out-J-R: WHY
 *   verified: S of T results
 *   incomplete: D of T steps done
 *
 * The learner's files are opened without following links and without
 * blocking (a FIFO would hang root), and must be regular files of the
 * exact size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <sys/stat.h>

#define MAXSIZES 8
#define MAXREPS 9
#define MAXRANKS 8

static const char *dir;
static int ranks, reps, nsizes;
static long sizes[MAXSIZES];
static float *want[MAXSIZES]; /* the sum the harness computed */
static double took[MAXSIZES * MAXREPS];
static long long pkts[MAXSIZES * MAXREPS];
static int early[MAXSIZES * MAXREPS];
static int steps, done_steps, verified, checked_to;
static char first_diff[256];
static int diffs;

static void path(char *p, size_t n, const char *what, int j, int r)
{
	snprintf(p, n, "%s/%s-%d-%d", dir, what, j, r);
}

static int exists(const char *what, int j, int r)
{
	char p[256];
	struct stat st;
	path(p, sizeof p, what, j, r);
	return lstat(p, &st) == 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* sent is the sum of sent_pkts over the rxe devices (rxe0, rxe1, ...).
 * The kernel keeps a port's hw_counters for a lifespan (10 ms by default,
 * rounded up to jiffies: drivers/infiniband/core/sysfs.c) and answers
 * reads within it from that copy, so reads here are 25 ms apart: never
 * inside a timed all-reduce, as the ranks wait for go or are done. */
static long long sent(void)
{
	static double last;
	double wait = last + 0.025 - now();
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
	long long sum = 0;
	for (int d = 0; d < 8; d++) {
		char p[96];
		long long v = 0;
		snprintf(p, sizeof p, "/sys/class/infiniband/rxe%d/ports/1/hw_counters/sent_pkts", d);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lld", &v) == 1)
			sum += v;
		fclose(f);
	}
	last = now();
	return sum;
}

/* publish writes name in dir as root's own new file, never through a file
 * or link someone made first. */
static void publish(const char *name, const void *data, size_t len)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	if (fd < 0) {
		fprintf(stdout, "harness: %s: %s\n", name, strerror(errno));
		exit(1);
	}
	const char *b = data;
	while (len > 0) {
		ssize_t w = write(fd, b, len);
		if (w <= 0) {
			fprintf(stdout, "harness: write %s: %s\n", name, strerror(errno));
			exit(1);
		}
		b += w;
		len -= w;
	}
	close(fd);
}

/* check compares step j's results with the sums, once. */
static void check(int j)
{
	int k = j / reps;
	long n = sizes[k];
	float *got = malloc(n * sizeof *got);
	for (int r = 0; r < ranks; r++) {
		char p[256];
		path(p, sizeof p, "out", j, r);
		int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
		struct stat st;
		const char *why = NULL;
		if (fd < 0)
			why = strerror(errno);
		else if (fstat(fd, &st) || !S_ISREG(st.st_mode))
			why = "not a regular file";
		else if (st.st_size != (off_t)(n * sizeof *got))
			why = "not SIZE floats long";
		else if (pread(fd, got, n * sizeof *got, 0) != (ssize_t)(n * sizeof *got))
			why = "short read";
		if (fd >= 0)
			close(fd);
		if (why) {
			printf("missing: size %ld rank %d out-%d-%d: %s\n", n, r, j, r, why);
			diffs++;
			continue;
		}
		for (long i = 0; i < n; i++) {
			if (got[i] != want[k][i]) { /* a NaN differs too */
				if (!first_diff[0])
					snprintf(first_diff, sizeof first_diff, "first difference: size %ld rank %d index %ld want %.0f got %.9g",
						 n, r, i, want[k][i], got[i]);
				diffs++;
				goto next;
			}
		}
		verified++;
	next:
		unlink(p);
	}
	free(got);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(void)
{
	for (; checked_to < done_steps; checked_to++)
		check(checked_to);
	for (int j = 0; j < done_steps; j++) {
		double bytes = sizes[j / reps] * 4.0;
		/* Each rank must receive (RANKS-1)/RANKS of the vector to reduce
		 * and as much again to gather, whatever the algorithm: at least
		 * 2(RANKS-1) x bytes in all, in packets of at most 4096 bytes
		 * (rxe's largest MTU; acknowledgements only add to the count). */
		long long least = (long long)(2 * (ranks - 1) * bytes / 4096);
		printf("step %d size %ld: %.0f us sent_pkts %lld%s\n", j, sizes[j / reps], took[j] * 1e6, pkts[j],
		       early[j] ? " done before go" : "");
		if (pkts[j] < least)
			printf("few packets: size %ld step %d: sent_pkts %lld, at least %lld\n", sizes[j / reps], j, pkts[j], least);
	}
	for (int k = 0; k < nsizes; k++) {
		double t[MAXREPS];
		int m = 0;
		for (int j = k * reps; j < (k + 1) * reps && j < done_steps; j++)
			if (!early[j] && took[j] > 0)
				t[m++] = took[j];
		if (m == 0)
			continue;
		qsort(t, m, sizeof t[0], cmpd);
		double med = m % 2 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
		double bytes = sizes[k] * 4.0;
		double alg = bytes / med / 1e9;
		printf("size %ld: algbw %.3g GB/s busbw %.3g GB/s (median of %d runs, %.0f us)\n", sizes[k], alg,
		       alg * 2 * (ranks - 1) / ranks, m, med * 1e6);
	}
	if (first_diff[0])
		printf("%s\n", first_diff);
	printf("verified: %d of %d results\n", verified, steps * ranks);
	if (done_steps < steps)
		printf("incomplete: %d of %d steps done\n", done_steps, steps);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	dir = getenv("LAB_PEER_DIR");
	if (!dir)
		dir = "/run/lab-peer";
	if (argc < 4) {
		printf("harness: usage RANKS REPS SIZE...\n");
		return 1;
	}
	ranks = atoi(argv[1]);
	reps = atoi(argv[2]);
	nsizes = argc - 3;
	if (ranks < 2 || ranks > MAXRANKS || reps < 1 || reps > MAXREPS || nsizes > MAXSIZES) {
		printf("harness: 2-%d ranks, 1-%d reps, at most %d sizes\n", MAXRANKS, MAXREPS, MAXSIZES);
		return 1;
	}
	steps = nsizes * reps;
	unsigned seed;
	FILE *u = fopen("/dev/urandom", "r");
	if (!u || fread(&seed, sizeof seed, 1, u) != 1) {
		printf("harness: no /dev/urandom\n");
		return 1;
	}
	fclose(u);
	srandom(seed);
	char job[256];
	int off = snprintf(job, sizeof job, "%d %d %d", ranks, reps, nsizes);
	for (int k = 0; k < nsizes; k++) {
		sizes[k] = atol(argv[3 + k]);
		if (sizes[k] < ranks || sizes[k] > (1 << 20)) {
			printf("harness: size %ld must be %d to %d\n", sizes[k], ranks, 1 << 20);
			return 1;
		}
		off += snprintf(job + off, sizeof job - off, " %ld", sizes[k]);
		want[k] = calloc(sizes[k], sizeof(float));
		float *in = malloc(sizes[k] * sizeof(float));
		for (int r = 0; r < ranks; r++) {
			for (long i = 0; i < sizes[k]; i++) {
				in[i] = (float)(random() % 201 - 100);
				want[k][i] += in[i];
			}
			char name[64];
			snprintf(name, sizeof name, "in-%d-%d", k, r);
			publish(name, in, sizes[k] * sizeof(float));
		}
		free(in);
	}
	snprintf(job + off, sizeof job - off, "\n");
	publish("job", job, strlen(job));

	publish("ready", "1\n", 2);
	fflush(stdout);

	/* waiting: 0 for arrivals of step j, 1 for its done files. */
	int j = 0, waiting = 0;
	double t0 = 0;
	long long p0 = 0;
	for (;;) {
		int progressed = 1;
		while (progressed && j < steps) {
			progressed = 0;
			int all = 1;
			for (int r = 0; r < ranks && all; r++)
				all = exists(waiting ? "done" : "arrive", j, r);
			if (!all)
				break;
			if (!waiting) {
				/* Every rank has its input loaded and its receives
				 * posted: the previous step's results are written. */
				for (; checked_to < j; checked_to++)
					check(checked_to);
				for (int r = 0; r < ranks; r++)
					if (exists("done", j, r))
						early[j] = 1;
				p0 = sent();
				char name[32];
				snprintf(name, sizeof name, "go-%d", j);
				t0 = now();
				publish(name, "", 0);
				waiting = 1;
			} else {
				took[j] = now() - t0; /* before sent(), which may wait */
				pkts[j] = sent() - p0;
				done_steps = ++j;
				waiting = 0;
			}
			progressed = 1;
		}
		/* The ranks' files are looked for every millisecond (the
		 * guest's headers have no inotify): a time is good to about
		 * 1 ms, and the largest size takes far longer here. */
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		if (poll(&pf, 1, 1) < 0 && errno != EINTR)
			break;
		if (pf.revents) {
			char b[64];
			if (read(0, b, sizeof b) <= 0)
				break;
		}
	}
	report();
	return 0;
}
