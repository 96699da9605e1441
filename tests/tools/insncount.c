// SPDX-License-Identifier: GPL-2.0
/*
 * insncount - count the instructions a program executes inside given
 * functions, instruction by instruction (ptrace single-step).
 *
 *	insncount -o OUT -b BINARY -f OFF[,OFF...] [-x FROM-TO] [-e] -- COMMAND [ARG...]
 *
 * OFF: the functions' entry offsets in BINARY (objdump addresses of a PIE,
 * hex).  Every thread of COMMAND gets an x86 debug-register breakpoint on
 * each entry (up to three); a thread that reaches one is single-stepped
 * until the function returns to its caller, and every instruction address
 * it executed meanwhile is counted, callees included.  A call whose return
 * address lies in [FROM, TO) (-x, hex offsets) runs untraced: the thread
 * gets a breakpoint on the return address instead, and the entries are
 * armed again when it gets there.  OUT gets, per traced entry:
 *	entry TID FUNC_OFF RETURN_OFF RDI
 *	RIP_OFF COUNT		(one line per distinct instruction)
 *	e FROM_OFF TO_OFF COUNT	(-e: one line per distinct pair of
 *				 instructions executed one after the other)
 * with offsets relative to BINARY's load address (-1 for an address outside
 * it).  COMMAND's stdout and stderr pass through; the exit status is
 * COMMAND's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FUNCS	3	/* DR3 is the return breakpoint of an untraced call */
#define MAX_THREADS	64
#define HASH_BITS	14

struct count {
	uint64_t rip, n;
};

struct edge {
	uint64_t from, to, n;
};

struct thread {
	pid_t tid;
	int stepping;			/* inside a traced function */
	int skipping;			/* inside an untraced call, DR3 on its return */
	uint64_t entry_rsp, ret, func, rdi;
	struct count *tab;		/* open addressing, 1 << HASH_BITS */
	size_t used;
	struct edge *etab;		/* -e: the same, keyed by (from, to) */
	size_t eused;
	uint64_t prev;			/* the last instruction counted, 0 at entry */
};

static struct thread threads[MAX_THREADS];
static uint64_t funcs[MAX_FUNCS];
static int nfuncs;
static uint64_t base, base_end, skip_from, skip_to;
static FILE *out;
static int edges;

static void die(const char *what)
{
	perror(what);
	exit(111);
}

static struct thread *find(pid_t tid, int create)
{
	int i;

	for (i = 0; i < MAX_THREADS; i++)
		if (threads[i].tid == tid)
			return &threads[i];
	if (!create)
		return NULL;
	for (i = 0; i < MAX_THREADS; i++)
		if (!threads[i].tid) {
			memset(&threads[i], 0, sizeof(threads[i]));
			threads[i].tid = tid;
			return &threads[i];
		}
	fprintf(stderr, "insncount: more than %d threads\n", MAX_THREADS);
	exit(111);
}

static void poke_dr(pid_t tid, int i, uint64_t v)
{
	if (ptrace(PTRACE_POKEUSER, tid, offsetof(struct user, u_debugreg) + i * 8, v))
		die("PTRACE_POKEUSER debugreg");
}

static uint64_t peek_dr(pid_t tid, int i)
{
	errno = 0;
	uint64_t v = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user, u_debugreg) + i * 8, 0);

	if (errno)
		die("PTRACE_PEEKUSER debugreg");
	return v;
}

/* execute breakpoints (RW 00, LEN 00) on every function, local enable bits */
static void arm(pid_t tid, int on)
{
	uint64_t dr7 = 0;
	int i;

	if (on) {
		for (i = 0; i < nfuncs; i++)
			poke_dr(tid, i, base + funcs[i]);
		for (i = 0; i < nfuncs; i++)
			dr7 |= 1ULL << (2 * i);
	}
	poke_dr(tid, 7, dr7);
}

static void count(struct thread *t, uint64_t rip)
{
	size_t mask = (1u << HASH_BITS) - 1, h = (rip * 0x9e3779b97f4a7c15ULL) >> (64 - HASH_BITS);

	if (!t->tab) {
		t->tab = calloc(mask + 1, sizeof(*t->tab));
		if (!t->tab)
			die("calloc");
	}
	while (t->tab[h].n && t->tab[h].rip != rip)
		h = (h + 1) & mask;
	if (!t->tab[h].n) {
		if (++t->used > mask / 2) {
			fprintf(stderr, "insncount: too many distinct instructions\n");
			exit(111);
		}
		t->tab[h].rip = rip;
	}
	t->tab[h].n++;
}

/* -e: the pair (t->prev, rip): a taken branch where rip is not prev's next instruction */
static void count_edge(struct thread *t, uint64_t rip)
{
	size_t mask = (1u << HASH_BITS) - 1;
	size_t h = ((t->prev ^ (rip << 7)) * 0x9e3779b97f4a7c15ULL) >> (64 - HASH_BITS);

	if (!t->etab) {
		t->etab = calloc(mask + 1, sizeof(*t->etab));
		if (!t->etab)
			die("calloc");
	}
	while (t->etab[h].n && (t->etab[h].from != t->prev || t->etab[h].to != rip))
		h = (h + 1) & mask;
	if (!t->etab[h].n) {
		if (++t->eused > mask / 2) {
			fprintf(stderr, "insncount: too many distinct pairs of instructions\n");
			exit(111);
		}
		t->etab[h].from = t->prev;
		t->etab[h].to = rip;
	}
	t->etab[h].n++;
}

static void step(struct thread *t, uint64_t rip)
{
	count(t, rip);
	if (edges && t->prev)
		count_edge(t, rip);
	t->prev = rip;
}

static long long rel(uint64_t a)
{
	return a >= base && a < base_end ? (long long)(a - base) : -1;
}

static void flush_entry(struct thread *t)
{
	size_t i;

	fprintf(out, "entry %d %llx %llx %llx\n", t->tid, rel(t->func), rel(t->ret),
		(unsigned long long)t->rdi);
	for (i = 0; i < (1u << HASH_BITS); i++)
		if (t->tab[i].n) {
			fprintf(out, "%llx %llu\n", rel(t->tab[i].rip),
				(unsigned long long)t->tab[i].n);
			t->tab[i].n = 0;
		}
	t->used = 0;
	for (i = 0; edges && i < (1u << HASH_BITS); i++)
		if (t->etab[i].n) {
			fprintf(out, "e %llx %llx %llu\n", rel(t->etab[i].from),
				rel(t->etab[i].to), (unsigned long long)t->etab[i].n);
			t->etab[i].n = 0;
		}
	t->eused = 0;
	t->prev = 0;
}

/* the load address and end of BINARY in the tracee (its mappings) */
static void find_base(pid_t pid, const char *binary)
{
	char path[64], line[512], real[4096];
	unsigned long lo, hi, off;
	FILE *f;

	if (!realpath(binary, real))
		die(binary);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/');

		if (!name || sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) != 3)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, real))
			continue;
		if (!base && !off)
			base = lo;
		if (hi > base_end)
			base_end = hi;
	}
	fclose(f);
	if (!base) {
		fprintf(stderr, "insncount: %s is not mapped in the traced process\n", real);
		exit(111);
	}
}

int main(int argc, char **argv)
{
	const char *outpath = NULL, *binary = NULL;
	int opt, status, exit_status = 0;
	pid_t pid, tid;
	char *tok;

	while ((opt = getopt(argc, argv, "o:b:f:x:e")) != -1) {
		switch (opt) {
		case 'o':
			outpath = optarg;
			break;
		case 'b':
			binary = optarg;
			break;
		case 'e':
			edges = 1;
			break;
		case 'x':
			if (sscanf(optarg, "%lx-%lx", &skip_from, &skip_to) != 2) {
				fprintf(stderr, "insncount: -x FROM-TO (hex offsets)\n");
				return 111;
			}
			break;
		case 'f':
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (nfuncs == MAX_FUNCS) {
					fprintf(stderr, "insncount: at most %d functions\n", MAX_FUNCS);
					return 111;
				}
				funcs[nfuncs++] = strtoull(tok, NULL, 16);
			}
			break;
		default:
			return 111;
		}
	}
	if (!outpath || !binary || !nfuncs || optind >= argc) {
		fprintf(stderr, "usage: insncount -o OUT -b BINARY -f OFF[,OFF] [-x FROM-TO] [-e] -- COMMAND [ARG...]\n");
		return 111;
	}
	out = fopen(outpath, "w");
	if (!out)
		die(outpath);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0))
			die("PTRACE_TRACEME");
		execvp(argv[optind], argv + optind);
		die(argv[optind]);
	}
	/* stopped at exec: the binary is mapped now */
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status))
		die("waitpid (exec)");
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL))
		die("PTRACE_SETOPTIONS");
	find_base(pid, binary);
	find(pid, 1);
	arm(pid, 1);
	if (ptrace(PTRACE_CONT, pid, 0, 0))
		die("PTRACE_CONT");
	for (;;) {
		struct user_regs_struct regs;
		struct thread *t;
		int sig, event;

		tid = waitpid(-1, &status, __WALL);
		if (tid < 0) {
			if (errno == ECHILD)
				break;
			die("waitpid");
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			t = find(tid, 0);
			if (t)
				t->tid = 0;
			if (tid == pid)
				exit_status = WIFEXITED(status) ? WEXITSTATUS(status) :
					      128 + WTERMSIG(status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		event = status >> 16;
		t = find(tid, 1);
		if (event == PTRACE_EVENT_CLONE) {
			unsigned long child;

			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child))
				die("PTRACE_GETEVENTMSG");
			/* the new thread starts stopped (SIGSTOP): armed when it reports */
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if (sig == SIGSTOP && !t->tab && !t->stepping && tid != pid) {
			arm(tid, 1);	/* a new thread's first stop */
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if (sig != SIGTRAP) {
			ptrace(t->stepping ? PTRACE_SINGLESTEP : PTRACE_CONT, tid, 0, sig);
			continue;
		}
		if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
			die("PTRACE_GETREGS");
		if (!t->stepping) {
			uint64_t dr6 = peek_dr(tid, 6);

			if (t->skipping && (dr6 & 8)) {		/* back from an untraced call */
				poke_dr(tid, 6, 0);
				t->skipping = 0;
				arm(tid, 1);
				ptrace(PTRACE_CONT, tid, 0, 0);
				continue;
			}
			if (!(dr6 & ((1u << nfuncs) - 1))) {	/* not ours */
				ptrace(PTRACE_CONT, tid, 0, 0);
				continue;
			}
			poke_dr(tid, 6, 0);
			errno = 0;
			t->ret = ptrace(PTRACE_PEEKDATA, tid, regs.rsp, 0);
			if (errno)
				die("PTRACE_PEEKDATA");
			if (skip_to && rel(t->ret) >= (long long)skip_from &&
			    rel(t->ret) < (long long)skip_to) {
				t->skipping = 1;
				poke_dr(tid, 3, t->ret);
				poke_dr(tid, 7, 1ULL << 6);	/* L3 only, execute */
				ptrace(PTRACE_CONT, tid, 0, 0);
				continue;
			}
			t->entry_rsp = regs.rsp;
			t->func = regs.rip;
			t->rdi = regs.rdi;
			t->stepping = 1;
			arm(tid, 0);
			step(t, regs.rip);
			ptrace(PTRACE_SINGLESTEP, tid, 0, 0);
			continue;
		}
		if (regs.rip == t->ret && regs.rsp == t->entry_rsp + 8) {
			flush_entry(t);
			t->stepping = 0;
			arm(tid, 1);
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		step(t, regs.rip);
		ptrace(PTRACE_SINGLESTEP, tid, 0, 0);
	}
	fclose(out);
	return exit_status;
}
