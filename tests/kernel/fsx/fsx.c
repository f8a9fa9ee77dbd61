/*
 * pfs-fsx: random operations on one file from two processes and two
 * mounts, each checked against an in-memory model (see fsx.h and
 * README.md). The driver keeps the model; workers run the calls.
 *
 *   pfs-fsx [options] FILE [FILE2]
 *
 * FILE2 names the same file through a second mount of the same file
 * system: the driver moves between the mounts the way close-to-open
 * consistency allows (every descriptor of one mount closed before the
 * other is used).
 */
#include "fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#define FALLOC_FL_PUNCH_HOLE 0x02
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

static const char *const op_names[] = {
	[OP_READ] = "read",	    [OP_WRITE] = "write",
	[OP_DREAD] = "dread",	    [OP_DWRITE] = "dwrite",
	[OP_MAPREAD] = "mapread",   [OP_MAPWRITE] = "mapwrite",
	[OP_TRUNCATE] = "truncate", [OP_FALLOC] = "falloc",
	[OP_PUNCH] = "punch",	    [OP_ZERO] = "zero",
	[OP_COPY] = "copy",	    [OP_FSYNC] = "fsync",
	[OP_REOPEN] = "reopen",	    [OP_VERIFY] = "verify",
	[OP_CLOSE_MOUNT] = "switch-mount",
};

/* How often each operation is drawn, relative to the others. */
static const unsigned weights[OP_NKINDS] = {
	[OP_READ] = 8,	   [OP_WRITE] = 12, [OP_DREAD] = 4,  [OP_DWRITE] = 4,
	[OP_MAPREAD] = 3,  [OP_MAPWRITE] = 3, [OP_TRUNCATE] = 6,
	[OP_FALLOC] = 3,   [OP_PUNCH] = 3,  [OP_ZERO] = 3,   [OP_COPY] = 4,
	[OP_FSYNC] = 2,	   [OP_REOPEN] = 2,
};

/* ---- settings ----------------------------------------------------------- */

static uint64_t max_ops = 10000;
static double max_seconds = 120;
static uint64_t seed;
static uint64_t maxlen = 512 * 1024;	/* the file never grows past this */
static uint64_t maxop = 64 * 1024;	/* bytes of one operation at most */
static uint64_t align = 4096;		/* of O_DIRECT offsets and lengths */
static unsigned switch_every = 25;	/* mounts: 1 in N ops */
static unsigned op_timeout_s = 120;
static FILE *replay;			/* -r: operations from a file */
static bool enabled[OP_NKINDS];
static bool verbose;

/* ---- the model ------------------------------------------------------------ */

static uint8_t *good;		/* the file's bytes; zero past size */
static uint32_t *writer;	/* op that wrote each byte, 0: zeros */
static uint64_t size;
static uint64_t opno;

/* A byte of op n's data at file offset x: never 0, differs per op. */
static uint8_t pattern(uint64_t n, uint64_t x)
{
	uint8_t b = (uint8_t)(x * 0x2d + (x >> 9) + n * 0x65);

	return b ? b : 0xff;
}

static void model_zero(uint64_t from, uint64_t to)
{
	if (to > from) {
		memset(good + from, 0, to - from);
		memset(writer + from, 0, (to - from) * sizeof(*writer));
	}
}

static void model_size(uint64_t s)
{
	if (s < size)
		model_zero(s, size);
	size = s;
}

/* ---- the log -------------------------------------------------------------- */

struct logged {
	uint64_t n;
	int op, worker, mount, flag;
	uint64_t off, len, off2, size_after;
};

#define LOG_KEEP 64
static struct logged ring[LOG_KEEP];
/* every op that put data into the file, to name stale bytes' origin */
static struct logged *history;
static size_t history_len, history_cap;

static void log_op(const struct fsx_cmd *c, int worker)
{
	struct logged l = { opno, c->op, worker, c->mount, c->flag, c->off,
			    c->len, c->off2, size };

	ring[opno % LOG_KEEP] = l;
	if (c->op != OP_WRITE && c->op != OP_DWRITE && c->op != OP_MAPWRITE)
		return;
	if (history_len == history_cap) {
		history_cap = history_cap ? 2 * history_cap : 1024;
		history = realloc(history, history_cap * sizeof(*history));
		if (!history) {
			perror("pfs-fsx: realloc");
			exit(2);
		}
	}
	history[history_len++] = l;
}

static void print_op(const struct logged *l)
{
	printf("  %6" PRIu64 " w%d m%d %-12s", l->n, l->worker, l->mount,
	       op_names[l->op]);
	switch (l->op) {
	case OP_TRUNCATE:
		printf(" to 0x%" PRIx64 "%s", l->len, l->flag ? " (path)" : "");
		break;
	case OP_COPY:
		printf(" 0x%" PRIx64 "..0x%" PRIx64 " -> 0x%" PRIx64, l->off,
		       l->off + l->len - 1, l->off2);
		break;
	case OP_FSYNC:
	case OP_REOPEN:
	case OP_CLOSE_MOUNT:
		break;
	default:
		printf(" 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 ")", l->off,
		       l->off + l->len - 1, l->len);
		if (l->op >= OP_FALLOC && l->op <= OP_ZERO)
			printf(" mode 0x%x", l->flag);
	}
	printf(" size 0x%" PRIx64 "\n", l->size_after);
}

static void print_log(void)
{
	uint64_t first = opno >= LOG_KEEP ? opno - LOG_KEEP + 1 : 1;

	printf("pfs-fsx: the last operations (worker, mount, op, range, "
	       "size after):\n");
	for (uint64_t n = first; n <= opno; n++)
		if (ring[n % LOG_KEEP].n == n)
			print_op(&ring[n % LOG_KEEP]);
}

/* Names the writes whose data a stale byte at off matches. */
static void name_origin(uint64_t off, uint8_t got)
{
	int shown = 0;

	for (size_t i = history_len; i-- > 0 && shown < 4;) {
		const struct logged *l = &history[i];

		if (off >= l->off && off < l->off + l->len &&
		    pattern(l->n, off) == got) {
			printf("pfs-fsx:   byte 0x%02x at 0x%" PRIx64
			       " is what op %" PRIu64 " (%s) wrote there\n",
			       got, off, l->n, op_names[l->op]);
			shown++;
		}
	}
	if (!shown && got)
		printf("pfs-fsx:   byte 0x%02x at 0x%" PRIx64
		       " matches no write there\n", got, off);
}

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void dump_workers(void);

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("pfs-fsx: seed %" PRIu64 ": FAILED at op %" PRIu64 ": ", seed,
	       opno);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	print_log();
	printf("pfs-fsx: rerun with -S %" PRIu64 " to repeat this run\n",
	       seed);
	fflush(stdout);
	dump_workers();
	exit(1);
}

/* Compares n bytes read at off with the model. */
static void check_bytes(const uint8_t *got, uint64_t off, uint64_t n,
			const char *what)
{
	uint64_t bad = 0, first = 0;

	for (uint64_t i = 0; i < n; i++) {
		if (got[i] != good[off + i]) {
			if (!bad++)
				first = i;
		}
	}
	if (!bad)
		return;
	printf("pfs-fsx: %s: %" PRIu64 " bad bytes in 0x%" PRIx64
	       "..0x%" PRIx64 ", the first at 0x%" PRIx64 "\n",
	       what, bad, off, off + n - 1, off + first);
	printf("pfs-fsx:   offset      expected (op)   got\n");
	for (uint64_t i = first; i < n && i < first + 16; i++)
		printf("pfs-fsx:   0x%08" PRIx64 "  0x%02x (%6u)    0x%02x%s\n",
		       off + i, good[off + i], writer[off + i], got[i],
		       got[i] != good[off + i] ? "  <-" : "");
	name_origin(off + first, got[first]);
	die("READ BAD DATA (%s) at offset 0x%" PRIx64 ", %" PRIu64
	    " bytes read at 0x%" PRIx64, what, off + first, n, off);
}

/* ---- workers -------------------------------------------------------------- */

struct proc {
	pid_t pid;
	int cmd, reply;
};

static struct proc procs[2];
static uint8_t *shbuf;
static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

static void start_workers(const char *const paths[2])
{
	for (int i = 0; i < 2; i++) {
		int c[2], r[2];

		if (pipe(c) || pipe(r)) {
			perror("pfs-fsx: pipe");
			exit(2);
		}
		fflush(stdout);
		procs[i].pid = fork();
		if (procs[i].pid < 0) {
			perror("pfs-fsx: fork");
			exit(2);
		}
		if (procs[i].pid == 0) {
			close(c[1]);
			close(r[0]);
			fsx_worker(i, paths, shbuf, c[0], r[1]);
		}
		close(c[0]);
		close(r[1]);
		procs[i].cmd = c[1];
		procs[i].reply = r[0];
	}
}

static void stop_workers(void)
{
	struct fsx_cmd c = { .op = OP_EXIT };

	for (int i = 0; i < 2; i++) {
		if (procs[i].pid <= 0)
			continue;
		if (write(procs[i].cmd, &c, sizeof(c)) < 0) {
			/* it is gone already: waitpid tells */
		}
		close(procs[i].cmd);
		waitpid(procs[i].pid, NULL, 0);
		procs[i].pid = 0;
	}
}

/* On failure: workers stuck in the kernel are left to the caller's timeout. */
static void dump_workers(void)
{
	for (int i = 0; i < 2; i++) {
		if (procs[i].pid > 0)
			kill(procs[i].pid, SIGKILL);
	}
}

static struct fsx_reply call(int worker, const struct fsx_cmd *c)
{
	struct fsx_reply r;
	ssize_t n;

	if (write(procs[worker].cmd, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		die("worker %d is gone (write: %s)", worker, strerror(errno));
	alarm(op_timeout_s);
	do {
		n = read(procs[worker].reply, &r, sizeof(r));
	} while (n < 0 && errno == EINTR && !timed_out);
	alarm(0);
	if (timed_out)
		die("%s by worker %d did not finish within %u s",
		    op_names[c->op], worker, op_timeout_s);
	if (n != (ssize_t)sizeof(r))
		die("worker %d died during %s", worker, op_names[c->op]);
	return r;
}

/* ---- drawing operations -------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: a seed gives the same run on every machine */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* A range for data going in: anywhere below maxlen. */
static void draw_range(struct fsx_cmd *c, uint64_t unit)
{
	c->off = below(maxlen) / unit * unit;
	c->len = (1 + below(maxop)) / unit * unit;
	if (!c->len)
		c->len = unit;
	if (c->off + c->len > maxlen)
		c->off = (maxlen - c->len) / unit * unit;
}

/* A range inside the file (size > 0). */
static void draw_inside(struct fsx_cmd *c)
{
	c->off = below(size);
	c->len = 1 + below(min_u64(maxop, size - c->off));
}

static int draw_op(void)
{
	unsigned total = 0, pick;

	for (int k = 0; k < OP_NKINDS; k++)
		total += enabled[k] ? weights[k] : 0;
	pick = (unsigned)below(total);
	for (int k = 0; k < OP_NKINDS; k++) {
		if (!enabled[k])
			continue;
		if (pick < weights[k])
			return k;
		pick -= weights[k];
	}
	return OP_WRITE;
}

/* Fills in c for kind; false when the op makes no sense now. */
static bool plan(struct fsx_cmd *c, int kind)
{
	c->op = kind;
	c->flag = 0;
	switch (kind) {
	case OP_READ:
	case OP_MAPREAD:
		if (!size)
			return false;
		draw_inside(c);
		return true;
	case OP_DREAD:
		if (!size)
			return false;
		draw_inside(c);
		c->off = c->off / align * align;
		c->len = (c->len + align - 1) / align * align;
		return true;
	case OP_WRITE:
	case OP_MAPWRITE:
	case OP_FALLOC:
	case OP_ZERO:
		draw_range(c, 1);
		if (kind == OP_FALLOC || kind == OP_ZERO) {
			c->flag = kind == OP_ZERO ? FALLOC_FL_ZERO_RANGE : 0;
			if (rnd() & 1)
				c->flag |= FALLOC_FL_KEEP_SIZE;
		}
		return true;
	case OP_DWRITE:
		draw_range(c, align);
		return true;
	case OP_TRUNCATE:
		/* down, up or anywhere, a third each */
		switch (below(3)) {
		case 0:
			c->len = below(size + 1);
			break;
		case 1:
			c->len = size + below(maxlen - size + 1);
			break;
		default:
			c->len = below(maxlen + 1);
		}
		c->flag = below(4) == 0;	/* truncate(2) by path */
		return true;
	case OP_PUNCH:
		if (!size)
			return false;
		draw_inside(c);
		c->flag = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
		return true;
	case OP_COPY:
		if (!size)
			return false;
		draw_inside(c);
		for (int tries = 0; tries < 8; tries++) {
			c->off2 = below(maxlen - c->len + 1);
			if (c->off2 + c->len <= c->off ||
			    c->off + c->len <= c->off2)
				return true;
		}
		return false;
	case OP_FSYNC:
		c->flag = rnd() & 1;	/* fdatasync */
		return true;
	case OP_REOPEN:
		return true;
	}
	return false;
}

/* The model after c, and what its reply must say. */
static void apply(const struct fsx_cmd *c, const struct fsx_reply *r)
{
	uint64_t end = c->off + c->len;

	switch (c->op) {
	case OP_READ:
	case OP_MAPREAD:
		if ((uint64_t)r->n != c->len)
			die("%s of 0x%" PRIx64 " bytes at 0x%" PRIx64
			    " got %" PRId64 " (size 0x%" PRIx64 ")",
			    op_names[c->op], c->len, c->off, r->n, size);
		check_bytes(shbuf, c->off, c->len, op_names[c->op]);
		break;
	case OP_DREAD: {
		uint64_t want = min_u64(c->len, size - c->off);

		if ((uint64_t)r->n != want)
			die("dread of 0x%" PRIx64 " bytes at 0x%" PRIx64
			    " got %" PRId64 ", expected %" PRIu64,
			    c->len, c->off, r->n, want);
		check_bytes(shbuf, c->off, want, "dread");
		break;
	}
	case OP_WRITE:
	case OP_DWRITE:
	case OP_MAPWRITE:
		if ((uint64_t)r->n != c->len)
			die("%s of 0x%" PRIx64 " bytes wrote %" PRId64,
			    op_names[c->op], c->len, r->n);
		memcpy(good + c->off, shbuf, c->len);
		for (uint64_t i = c->off; i < end; i++)
			writer[i] = (uint32_t)opno;
		if (end > size)
			size = end;
		break;
	case OP_TRUNCATE:
		model_size(c->len);
		break;
	case OP_FALLOC:
		if (!(c->flag & FALLOC_FL_KEEP_SIZE) && end > size)
			size = end;
		break;
	case OP_PUNCH:
		model_zero(c->off, min_u64(end, size));
		break;
	case OP_ZERO:
		model_zero(c->off, min_u64(end, size));
		if (!(c->flag & FALLOC_FL_KEEP_SIZE) && end > size)
			size = end;
		break;
	case OP_COPY:
		if ((uint64_t)r->n != c->len)
			die("copy_file_range of 0x%" PRIx64 " bytes copied %"
			    PRId64, c->len, r->n);
		memcpy(good + c->off2, good + c->off, c->len);
		memcpy(writer + c->off2, writer + c->off,
		       c->len * sizeof(*writer));
		if (c->off2 + c->len > size)
			size = c->off2 + c->len;
		break;
	}
}

/* Reads the whole file back (through the page cache or O_DIRECT). */
static void verify(int worker, int mount, bool direct)
{
	struct fsx_cmd c = { .op = OP_VERIFY, .mount = mount,
			     .flag = direct };
	struct fsx_reply r;

	c.len = direct ? (size / align + 1) * align : size + 1;
	r = call(worker, &c);
	if (r.err)
		die("verify by worker %d: %s: %s", worker, r.what,
		    strerror(r.err));
	if ((uint64_t)r.size != size)
		die("st_size is 0x%" PRIx64 ", expected 0x%" PRIx64
		    " (worker %d, mount %d)", (uint64_t)r.size, size, worker,
		    mount);
	if ((uint64_t)r.n != size)
		die("%s read of the whole file gave 0x%" PRIx64
		    " bytes, expected 0x%" PRIx64 " (worker %d, mount %d)",
		    direct ? "an O_DIRECT" : "a", (uint64_t)r.n, size, worker,
		    mount);
	check_bytes(shbuf, 0, size, direct ? "verify (O_DIRECT)" : "verify");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- replaying --------------------------------------------------------- */

/*
 * -r FILE: the operations of a known failure, one a line instead of drawn
 * ones ("#" starts a comment), each verified as drawn ones are:
 *   [w0|w1] read|write|dread|dwrite|mapread|mapwrite OFF LEN
 *   [w0|w1] truncate SIZE [path] | fsync | reopen | switch-mount
 * Returns false at the end of the file.
 */
static bool replay_next(struct fsx_cmd *c, int *worker, bool *switch_mount)
{
	char line[256], name[32], extra[16];
	unsigned long long a, b;
	int k, n;

	for (;;) {
		char *p = line;

		if (!fgets(line, sizeof(line), replay))
			return false;
		p[strcspn(p, "#\n")] = 0;
		p += strspn(p, " \t");
		if (!*p)
			continue;
		*worker = 0;
		if (p[0] == 'w' && (p[1] == '0' || p[1] == '1') &&
		    p[2] == ' ') {
			*worker = p[1] - '0';
			p += 3;
		}
		a = b = 0;
		extra[0] = 0;
		n = sscanf(p, "%31s %lli %lli %15s", name, &a, &b, extra);
		*switch_mount = !strcmp(name, "switch-mount");
		if (*switch_mount)
			return true;
		for (k = 0; k < OP_NKINDS; k++)
			if (!strcmp(name, op_names[k]))
				break;
		if (k == OP_NKINDS || n < 1) {
			fprintf(stderr, "pfs-fsx: bad replay line: %s\n", line);
			exit(2);
		}
		c->op = k;
		c->flag = 0;
		c->off = a;
		c->len = b;
		if (k == OP_TRUNCATE) {
			c->len = a;
			c->off = 0;
			c->flag = n >= 3 || !strcmp(extra, "path");
		}
		if (c->off + c->len > maxlen) {
			fprintf(stderr, "pfs-fsx: replay op past -l: %s\n",
				line);
			exit(2);
		}
		return true;
	}
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: pfs-fsx [-N ops] [-T seconds] [-S seed] [-l maxlen] "
		"[-o maxop]\n"
		"               [-A align] [-m switch_every] [-t op_timeout] "
		"[-x op,...] [-r replay] [-v]\n"
		"               FILE [FILE2]\n"
		"ops: read write dread dwrite mapread mapwrite truncate falloc "
		"punch zero copy fsync reopen\n"
		"-S 0 (default): a random seed, printed\n");
	exit(2);
}

static void disable(char *list)
{
	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		int k;

		for (k = 0; k < OP_NKINDS; k++)
			if (!strcmp(name, op_names[k]))
				break;
		if (k == OP_NKINDS) {
			fprintf(stderr, "pfs-fsx: unknown op %s\n", name);
			usage();
		}
		enabled[k] = false;
	}
}

static uint64_t number(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || end == s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *paths[2];
	unsigned counts[OP_NKINDS + 2] = { 0 };
	int mount = 0, nmounts, opt, fd;
	double start;

	for (int k = 0; k < OP_NKINDS; k++)
		enabled[k] = true;
	while ((opt = getopt(argc, argv, "N:T:S:l:o:A:m:t:x:r:v")) != -1) {
		switch (opt) {
		case 'N': max_ops = number(optarg); break;
		case 'T': max_seconds = (double)number(optarg); break;
		case 'S': seed = number(optarg); break;
		case 'l': maxlen = number(optarg); break;
		case 'o': maxop = number(optarg); break;
		case 'A': align = number(optarg); break;
		case 'm': switch_every = (unsigned)number(optarg); break;
		case 't': op_timeout_s = (unsigned)number(optarg); break;
		case 'x': disable(optarg); break;
		case 'r':
			replay = fopen(optarg, "r");
			if (!replay) {
				perror(optarg);
				return 2;
			}
			break;
		case 'v': verbose = true; break;
		default: usage();
		}
	}
	if (optind >= argc || argc - optind > 2 || !align || !maxop ||
	    maxlen < 2 * maxop || maxlen % align || maxop > maxlen)
		usage();
	nmounts = argc - optind;
	paths[0] = argv[optind];
	paths[1] = argv[optind + nmounts - 1];
	while (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		;
	seed &= 0xffffffffffffull;	/* short enough to type */
	rng_state = seed;
	setvbuf(stdout, NULL, _IOLBF, 0);

	good = calloc(maxlen, 1);
	writer = calloc(maxlen, sizeof(*writer));
	shbuf = mmap(NULL, maxlen + 2 * align + 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!good || !writer || shbuf == MAP_FAILED) {
		perror("pfs-fsx: memory");
		return 2;
	}
	fd = open(paths[0], O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0 || close(fd)) {
		fprintf(stderr, "pfs-fsx: %s: %s\n", paths[0], strerror(errno));
		return 2;
	}
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: read() returns */
	printf("pfs-fsx: seed %" PRIu64 ", at most %" PRIu64 " ops or %.0f s, "
	       "file %s%s%s, maxlen 0x%" PRIx64 ", maxop 0x%" PRIx64
	       ", O_DIRECT unit %" PRIu64 "\n", seed, max_ops, max_seconds,
	       paths[0], nmounts > 1 ? " and " : "",
	       nmounts > 1 ? paths[1] : "", maxlen, maxop, align);
	start_workers(paths);
	start = now_s();
	for (opno = 1; opno <= max_ops && now_s() - start < max_seconds;
	     opno++) {
		struct fsx_cmd c = { .mount = mount };
		int worker = (int)(rnd() & 1);
		bool switch_mount = false;
		struct fsx_reply r;

		if (replay) {
			if (!replay_next(&c, &worker, &switch_mount))
				break;
		} else {
			switch_mount = nmounts > 1 && below(switch_every) == 0;
		}
		if (switch_mount && nmounts > 1) {
			/* close-to-open: all of this mount's descriptors go */
			c.op = OP_CLOSE_MOUNT;
			for (int w = 0; w < 2; w++) {
				r = call(w, &c);
				if (r.err)
					die("worker %d: %s: %s", w, r.what,
					    strerror(r.err));
			}
			log_op(&c, 2);
			counts[OP_CLOSE_MOUNT]++;
			mount = 1 - mount;
			continue;
		}
		if (switch_mount)
			continue;
		while (!replay && !plan(&c, draw_op()))
			;
		if (c.op == OP_WRITE || c.op == OP_DWRITE ||
		    c.op == OP_MAPWRITE)
			for (uint64_t i = 0; i < c.len; i++)
				shbuf[i] = pattern(opno, c.off + i);
		if (verbose) {
			struct logged l = { opno, c.op, worker, c.mount,
					    c.flag, c.off, c.len, c.off2,
					    size };
			print_op(&l);
		}
		r = call(worker, &c);
		if (r.err)
			die("%s by worker %d: %s: %s", op_names[c.op], worker,
			    r.what, strerror(r.err));
		apply(&c, &r);
		log_op(&c, worker);
		counts[c.op]++;
		verify((int)(rnd() & 1), mount,
		       enabled[OP_DREAD] && below(8) == 0);
	}
	opno--;
	stop_workers();
	printf("pfs-fsx: seed %" PRIu64 ": passed %" PRIu64 " ops in %.1f s:",
	       seed, opno, now_s() - start);
	for (int k = 0; k <= OP_CLOSE_MOUNT; k++)
		if (counts[k])
			printf(" %s %u", op_names[k], counts[k]);
	printf("\n");
	return 0;
}
