// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Off-CPU time, one record per block.
//
// One program on the sched_switch tracepoint (tp_btf, so no kprobes are
// needed) sees both halves of every context switch:
//   * prev is leaving the CPU. If it blocks (not preempted) and belongs to a
//     traced process, note the time and WHERE it went to sleep in user code:
//     frame-pointer user stack id and a hash of the code addresses found
//     near the user stack pointer (see caller_hash below). On the first sight
//     of a user-side key also keep a snapshot: user registers and a copy of
//     the user stack, so user space can unwind it with CFI.
//   * next is coming back. If it has a pending note, the block lasted
//     now - then; blocks of at least min_block_ns get their kernel stack
//     (still intact: the thread has not run since) and one record in the
//     `blocks` ring buffer: when the block started (CLOCK_MONOTONIC, the clock
//     of perf samples), how long it lasted, and the stack ids. Shorter blocks
//     cost no kernel stack walk and no record.
// Records are written without waking user space (BPF_RB_NO_WAKEUP): the
// recorder reads the ring on its own schedule, so a block costs no wake-up.
//
// With cfg.wakers, a second program on sched_waking notes, when a traced
// thread that is blocked is woken, who woke it (the current task: the thread
// that released the lock, wrote to the pipe, signalled the condition) and its
// stacks, kernel and user, the user side with the same snapshot as a blocked
// thread's; the block's record carries them (bcc's offwaketime does this with
// kprobes).

#include "kiln_kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MAX_STACK_DEPTH 127
#define MAX_USER_STACK 32768
#define PAGE_BYTES 4096
#define SCAN_WORDS 64
#define MAX_CODE_WORDS 12
#define MAX_RANGES 64

/* Keep in sync with offcpu.rs (Counter). */
enum counter {
	C_BLOCKS = 0,       /* traced threads that went to sleep */
	C_COUNTED,          /* blocks that reached min_block_ns */
	C_SHORT,            /* blocks shorter than min_block_ns */
	C_RING_FULL,        /* blocks lost: the ring buffer was full */
	C_RING_FULL_NS,     /* ... and their time */
	C_KSTACK_ERR,       /* kernel stack not recorded */
	C_USTACK_ERR,       /* frame-pointer user stack not recorded */
	C_SNAP_TAKEN,       /* user stack snapshots stored */
	C_SNAP_ERR,         /* snapshot not stored: map full or no memory */
	C_STACK_COPY_ERR,   /* user stack memory unreadable at sp */
	C_STORAGE_ERR,      /* per-thread state unavailable */
	C_NO_RANGES,        /* no code ranges known for the process: no caller hash, fp stack uncut */
	C_SCAN_ERR,         /* caller hash skipped: stack words unreadable */
	C_WAKERS,           /* wakers recorded */
	C_NO_WAKER,         /* blocks recorded without their waker (none seen, or woken before min_block_ns) */
	C_UNSEEN_END,       /* blocks whose switch-in was not seen (per-thread state busy then) */
	C_MAX,
};

struct config {
	u64 min_block_ns;
	u32 user_stack_bytes;
	u32 filter_pids;
	u32 wakers;
	u32 runnable;    /* also record time runnable: preempted or yielded, waiting for a CPU */
	u32 no_blocked;  /* do not record blocks (only runnable time) */
	u32 pad;
};

const volatile struct config cfg = {};

/* Where a thread blocked: the key of its stacks. */
struct stack_key {
	u32 tgid;
	u32 pid;
	u64 kstack;      /* hash of the kernel stack, 0 = none */
	u64 ustack;      /* hash of the validated frame-pointer user stack, 0 = none */
	u64 caller_hash;
};

/* One record of the `blocks` ring buffer (RawBlock in offcpu.rs). */
struct block {
	u64 start_ns;    /* switch-out, bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	u64 dur_ns;      /* switch-in - switch-out */
	struct stack_key key;
	char comm[16];
	struct stack_key wkey; /* the waker, when waker == WAKER_SEEN */
	char wcomm[16];
	u32 waker;
	u32 runnable;    /* 1: the thread was runnable (preempted or yielded), not blocked */
};

enum waker_state {
	WAKER_OFF = 0,   /* wakers not asked for */
	WAKER_SEEN,      /* wkey/wcomm hold the waker */
	WAKER_NONE,      /* asked for, not seen (or woken before min_block_ns) */
};

/* What decides the user-side stack: one snapshot per (process, fp stack, caller hash). */
struct snap_key {
	u32 tgid;
	u32 pad;
	u64 ustack;
	u64 caller_hash;
};

struct snap_hdr {
	u64 ip;
	u64 sp;
	u64 bp;
	u32 len;
	u32 flags;
};

struct ustack_val {
	u32 len;
	u32 pad;
	u64 ips[MAX_STACK_DEPTH + 1];
};

struct scratch {
	/* The user frame-pointer walk's state (see fp_step). */
	u64 fp_bp;
	u64 fp_hash;
	u64 fp_n;
	u64 words[SCAN_WORDS];
	struct ustack_val ustack;
	struct ustack_val kstack;
	struct snap_hdr hdr;
	/* Snapshot map values are hdr + stack[0..user_stack_bytes]; the extra
	 * pages let each page-sized read be proven in bounds by the verifier. */
	u8 stack[MAX_USER_STACK + 2 * PAGE_BYTES];
};

struct ranges {
	u32 n;
	u32 pad;
	u64 start[MAX_RANGES];
	u64 end[MAX_RANGES];
};

struct pending {
	u64 ts;
	struct stack_key key;
	struct stack_key wkey;
	char wcomm[16];
	u32 waker;
	u32 runnable;
	/* What this thread's previous block stored already: a thread that blocks
	 * where it blocked before skips the maps' lookups (user space never
	 * deletes stacks, and keeps every snapshot it took). */
	u64 seen_ustack;
	u64 seen_kstack;
	u64 seen_snap_ustack;
	u64 seen_snap_caller;
};

/* Finished blocks, read by user space; user space sets the size. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} blocks SEC(".maps");

/* No BTF types on purpose: user space sizes the value to the configured stack bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(struct snap_key));
	__uint(value_size, sizeof(struct snap_hdr) + 16384);
} snaps SEC(".maps");

/* Snapshot keys already taken: user space takes snapshots out of `snaps` (to
 * free their memory), and a key seen again must not be copied again. LRU: a
 * key forgotten and seen again is copied once more, which user space ignores. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct snap_key);
	__type(value, u8);
} snapped SEC(".maps");

/* Kernel stacks by hash ({len, ips}), like ustacks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, struct ustack_val);
} kstacks SEC(".maps");

/* User stacks by hash. Not a STACK_TRACE map: those key by the raw walk,
 * and a frame-pointer walk through code without frame pointers picks up
 * junk (e.g. a double stored where rbp points) that differs on every block. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, struct ustack_val);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending);
} pend SEC(".maps");

/* Traced processes (tgid -> 1) when cfg.filter_pids is set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} pids SEC(".maps");

/* Executable mappings per process, sorted, filled from /proc/PID/maps by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct ranges);
} code SEC(".maps");

/* One scratch area per CPU (too large for a per-CPU array); user space sets max_entries. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

KILN_COUNTERS(C_MAX)

struct scan_ctx {
	struct scratch *s;
	struct ranges *r;
	u32 nwords;
	u32 matched;
	u64 hash;
};

/* Is w inside one of the process's executable mappings? Binary search, 64 ranges max.
 * A global function: the verifier checks it once, not at every call (its unrolled
 * search would multiply the paths of every loop that calls it). */
__attribute__((noinline)) int in_code(struct ranges *r, u64 w)
{
	u32 lo = 0, hi, idx;

	if (!r)
		return 0;
	hi = r->n;

	if (hi > MAX_RANGES)
		hi = MAX_RANGES;
	if (hi == 0 || w < r->start[0] || w >= r->end[(hi - 1) & (MAX_RANGES - 1)])
		return 0; /* outside all code: most data words end here */
#pragma unroll
	for (int k = 0; k < 7; k++) {
		if (lo >= hi)
			break;
		u32 mid = (lo + hi) / 2;
		if (mid >= MAX_RANGES)
			break;
		if (r->start[mid] <= w)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	idx = lo - 1;
	if (idx >= MAX_RANGES)
		return 0;
	return w < r->end[idx];
}

/* One word of the scan: hashed when it points into code. Returns 1 when done. */
static __always_inline int scan_one(struct scan_ctx *c, u64 idx)
{
	u64 w;

	if (idx >= c->nwords || c->matched >= MAX_CODE_WORDS)
		return 1;
	asm volatile("%[x] &= 63" : [x] "+r"(idx)); /* SCAN_WORDS - 1, for the verifier */
	w = c->s->words[idx];
	if (!in_code(c->r, w))
		return 0;
	/* FNV-1a over the 8 bytes of the word, folded into one multiply. */
	c->hash = (c->hash ^ w) * 0x100000001b3ULL;
	c->matched++;
	return 0;
}

/* Eight words per callback: a bpf_loop callback costs more than looking at a word. */
static long scan_words(u32 i, void *arg)
{
	struct scan_ctx *c = arg;
	u64 base = (u64)i * 8;

	return scan_one(c, base) || scan_one(c, base + 1) || scan_one(c, base + 2) ||
	       scan_one(c, base + 3) || scan_one(c, base + 4) || scan_one(c, base + 5) ||
	       scan_one(c, base + 6) || scan_one(c, base + 7);
}

/*
 * Distinguishes callers that the frame-pointer walk merges. Code without
 * frame pointers (Debian's libc) leaves rbp pointing at its caller's caller's
 * frame, so the fp walk skips the function that called, e.g.,
 * pthread_mutex_lock. The skipped return addresses still sit on the stack
 * between sp and that frame; hashing the first few words that point into
 * executable mappings separates such callers without hashing data (which
 * would split keys per mutex address, per request...).
 */
static __always_inline u64 caller_hash(struct scratch *s, struct ranges *r, u64 sp, u64 bp)
{
	struct scan_ctx c = { .s = s, .r = r, .hash = 0xcbf29ce484222325ULL };
	u32 first, want = sizeof(s->words);

	if (!r)
		return 0;
	/* When rbp holds a frame pointer just above sp, the return addresses the
	 * frame-pointer walk skips lie below it (above it are the frames the walk
	 * has): scan up to that frame's return address only. */
	if (bp > sp && bp - sp + 16 < want)
		want = ((u32)(bp - sp) + 16 + 7) & ~7U;
	/* Read up to the end of sp's page first: the next page may not exist. */
	first = PAGE_BYTES - (sp & (PAGE_BYTES - 1));
	if (first > want)
		first = want;
	first &= ~7U;
	if (first == 0 || first > sizeof(s->words) ||
	    bpf_probe_read_user(s->words, first, (void *)sp)) {
		count(C_SCAN_ERR, 1);
		return 0;
	}
	c.nwords = first / 8;
	if (first < want) {
		u32 rest = want - first;

		if (rest <= sizeof(s->words) && first < sizeof(s->words) &&
		    !bpf_probe_read_user((u8 *)s->words + first, rest & (sizeof(s->words) - 1),
					 (void *)(sp + first)))
			c.nwords = want / 8;
	}
	bpf_loop((c.nwords + 7) / 8, scan_words, &c, 0);
	return c.hash;
}

/*
 * The kind of thread: its name without digits (`1_scheduler` and `2_scheduler`
 * alike, `1_dirty_cpu_sch` and `0_poller` apart), mixed into the caller hash.
 * Threads of different kinds that block at the same place through the same
 * leaf frames (a BEAM's normal and dirty schedulers in one wait function)
 * have different stacks above what the scan reaches; one snapshot per kind
 * keeps each kind's own, and a pool's threads still share one.
 */
static __always_inline u64 kind_hash(struct task_struct *t)
{
	char comm[16] = {};
	u64 hash = 0x84222325cbf29ce4ULL;

	BPF_CORE_READ_STR_INTO(&comm, t, comm);
	for (int i = 0; i < 16; i++) {
		char c = comm[i];

		if (!c)
			break;
		if (c >= '0' && c <= '9')
			continue;
		hash = (hash ^ (u8)c) * 0x100000001b3ULL;
	}
	return hash;
}

/* Stores a stack under its hash (0 is kept for "none") unless it is there
 * already; returns the hash. */
static __always_inline u64 store_stack(void *map, u64 hash, struct ustack_val *v, u32 err_counter,
				       u64 *seen)
{
	if (hash == 0)
		hash = 1;
	if (seen) {
		if (*seen == hash)
			return hash;
		*seen = hash;
	}
	if (!bpf_map_lookup_elem(map, &hash)) {
		long err = bpf_map_update_elem(map, &hash, v, BPF_NOEXIST);

		if (err && err != -17 /* EEXIST: another CPU stored it first */)
			count(err_counter, 1);
	}
	return hash;
}

struct fp_ctx {
	struct scratch *s;
	struct ranges *r;
};

/* One frame of the frame-pointer walk: the return address at bp + 8, kept (and
 * hashed) while it returns into code, then on to the caller's frame at [bp],
 * which must lie higher on the stack. Returns 1 when the stack ends. The walk's
 * state lives in map memory (scratch), where the verifier does not track values,
 * so that one pass over the callback covers every frame. */
static long fp_step(u32 i, void *arg)
{
	struct fp_ctx *c = arg;
	struct scratch *s = c->s;
	u64 frame[2], n = s->fp_n, bp = s->fp_bp;

	if (n >= MAX_STACK_DEPTH || bp == 0 || (bp & 7))
		return 1;
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)bp))
		return 1;
	if (frame[1] == 0 || (c->r && !in_code(c->r, frame[1])))
		return 1;
	asm volatile("%[x] &= 127" : [x] "+r"(n)); /* MAX_STACK_DEPTH, for the verifier */
	s->ustack.ips[n] = frame[1];
	s->fp_hash = (s->fp_hash ^ frame[1]) * 0x100000001b3ULL;
	s->fp_n = n + 1;
	if (frame[0] <= bp)
		return 1;
	s->fp_bp = frame[0];
	return 0;
}

/*
 * Frame-pointer walk of the user stack from the thread's registers, cut at the
 * first return address that is not in an executable mapping (the walk has left
 * real frames there: code without frame pointers leaves rbp pointing anywhere),
 * and stored under its hash. Returns the hash, 0 if there is no stack.
 *
 * Walked here rather than by bpf_get_stack(BPF_F_USER_STACK): the kernel's walk
 * goes on until a read faults or 127 frames, so it ends in a fault taken with
 * page faults disabled at nearly every block (where a chain ends in a null
 * frame pointer, or in junk after code without frame pointers: Debian's libc);
 * recording a Go service, the machine's kernel-mode page faults went from one
 * a block to none. This walk stops before reading a null, unaligned or
 * descending frame pointer, or at the first return address outside the code:
 * the same stacks, the same hashes.
 */
static __always_inline u64 user_stack(struct scratch *s, struct ranges *r, u64 ip, u64 bp,
				      u64 *seen)
{
	struct fp_ctx c = { .s = s, .r = r };

	if (ip == 0) {
		count(C_USTACK_ERR, 1);
		return 0;
	}
	s->ustack.ips[0] = ip;
	s->fp_n = 1;
	s->fp_bp = bp;
	s->fp_hash = (0xcbf29ce484222325ULL ^ ip) * 0x100000001b3ULL;
	bpf_loop(MAX_STACK_DEPTH - 1, fp_step, &c, 0);
	s->ustack.len = s->fp_n;
	return store_stack(&ustacks, s->fp_hash, &s->ustack, C_USTACK_ERR, seen);
}

/* Copy up to user_stack_bytes of the stack from sp upwards, page by page:
 * a read that crosses into an unmapped page fails whole, so reading one page
 * at a time keeps everything up to the end of the stack mapping. */
static __always_inline u32 copy_stack(struct scratch *s, u64 sp)
{
	u64 want = cfg.user_stack_bytes, got = 0;

	if (want > MAX_USER_STACK)
		want = MAX_USER_STACK;
	for (int i = 0; i < MAX_USER_STACK / PAGE_BYTES + 1; i++) {
		u64 n, left;

		if (got >= want)
			break;
		left = want - got;
		n = PAGE_BYTES - ((sp + got) & (PAGE_BYTES - 1));
		if (n > left)
			n = left;
		/* No-ops given the checks above, but they bound the very registers
		 * passed to the helper, which is what the verifier needs. */
		asm volatile("%[n] &= 0x1fff" : [n] "+r"(n));
		asm volatile("%[g] &= 0x7fff" : [g] "+r"(got));
		if (bpf_probe_read_user(&s->stack[got], n, (void *)(sp + got)))
			break;
		got += n;
	}
	return got;
}

static __always_inline void snapshot(struct scratch *s, struct stack_key *key, u64 ip, u64 sp, u64 bp,
				     struct pending *seen)
{
	struct snap_key sk = { .tgid = key->tgid, .ustack = key->ustack, .caller_hash = key->caller_hash };
	long err;
	u8 one = 1;

	/* A thread that blocks where its last snapshot was stored skips the lookups;
	 * one that failed (the buffer full while user space fell behind) tries again
	 * at its next block there. */
	if (seen && seen->seen_snap_ustack == key->ustack && seen->seen_snap_caller == key->caller_hash)
		return;
	if (bpf_map_lookup_elem(&snapped, &sk)) {
		if (seen) {
			seen->seen_snap_ustack = key->ustack;
			seen->seen_snap_caller = key->caller_hash;
		}
		return;
	}
	s->hdr.ip = ip;
	s->hdr.sp = sp;
	s->hdr.bp = bp;
	s->hdr.flags = 0;
	s->hdr.len = copy_stack(s, sp);
	if (s->hdr.len == 0)
		count(C_STACK_COPY_ERR, 1);
	err = bpf_map_update_elem(&snaps, &sk, &s->hdr, BPF_NOEXIST);
	if (err == 0 || err == -17 /* EEXIST: another CPU stored it first */) {
		if (seen) {
			seen->seen_snap_ustack = key->ustack;
			seen->seen_snap_caller = key->caller_hash;
		}
	}
	if (err == 0) {
		bpf_map_update_elem(&snapped, &sk, &one, BPF_ANY);
		count(C_SNAP_TAKEN, 1);
	}
	else if (err != -17)
		count(C_SNAP_ERR, 1);
}

static __always_inline void on_sleep(void *ctx, struct task_struct *prev, u32 runnable)
{
	/* prev is the current task at sched_switch: its ids without reading it. The
	 * filter comes first, as most switches of the machine are not traced. */
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, pid = (u32)id;
	u32 cpu, flags;
	struct pending *p;
	struct scratch *s;

	if (pid == 0)
		return;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return;
	flags = BPF_CORE_READ(prev, flags);
	/* A thread's last switch-out is not a block; its memory is gone by then. A
	 * block it began before whose end went unseen is counted here, as it can
	 * no longer be at its next block. */
	if (flags & PF_EXITING) {
		p = bpf_task_storage_get(&pend, prev, 0, 0);
		if (p && p->ts) {
			count(C_UNSEEN_END, 1);
			p->ts = 0;
		}
		return;
	}
	count(C_BLOCKS, 1);
	p = bpf_task_storage_get(&pend, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		count(C_STORAGE_ERR, 1);
		return;
	}
	if (p->ts)
		count(C_UNSEEN_END, 1);
	p->key.tgid = tgid;
	p->key.pid = pid;
	p->key.caller_hash = 0;
	p->runnable = runnable;
	/* A runnable thread is not woken: it waits for a CPU. */
	p->waker = cfg.wakers && !runnable ? WAKER_NONE : WAKER_OFF;
	/* The kernel stack is taken at switch-in, and only for blocks that count. */
	p->key.kstack = 0;
	p->key.ustack = 0;
	if (!(flags & PF_KTHREAD)) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		struct ranges *r = bpf_map_lookup_elem(&code, &tgid);
		u64 ip, sp, bp;

		if (!r)
			count(C_NO_RANGES, 1);
		cpu = bpf_get_smp_processor_id();
		s = bpf_map_lookup_elem(&scratch, &cpu);
		if (regs && s) {
			ip = BPF_CORE_READ(regs, ip);
			sp = BPF_CORE_READ(regs, sp);
			bp = BPF_CORE_READ(regs, bp);
			p->key.ustack = user_stack(s, r, ip, bp, &p->seen_ustack);
			/* The process's first thread is a kind of its own: its blocks
			 * share no snapshot with its siblings' of the same name (all of
			 * Node's threads are `node`; its main thread's timed condition
			 * wait and a worker's condition wait scanned alike through a libc
			 * without frame pointers, and the workers' blocks were unwound
			 * with the main thread's stack). */
			p->key.caller_hash = caller_hash(s, r, sp, bp) ^ kind_hash(prev) ^
					     (pid == tgid ? 0x9e3779b97f4a7c15ULL : 0);
			snapshot(s, &p->key, ip, sp, bp, p);
		} else {
			count(C_SNAP_ERR, 1);
		}
	}
	p->ts = bpf_ktime_get_ns();
}

/* FNV-1a over a stack's addresses. An open loop, not bpf_loop: a callback per
 * frame costs more than the hash. */
static __always_inline u64 hash_stack(struct ustack_val *st)
{
	u64 hash = 0xcbf29ce484222325ULL;

	for (int i = 0; i < MAX_STACK_DEPTH; i++) {
		if (i >= st->len)
			break;
		hash = (hash ^ st->ips[i]) * 0x100000001b3ULL;
	}
	return hash;
}

/*
 * The kernel stack of a thread that is about to run again after a block that
 * counts: it has not run since it went to sleep, so its saved kernel stack is
 * still where it blocked. Walking it here rather than at switch-out spares
 * the walk (the largest part of the cost) for blocks shorter than
 * min_block_ns. Stored under its hash; returns the hash, 0 if none.
 */
static __always_inline u64 kernel_stack(struct task_struct *task, u64 *seen)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	long bytes;

	if (!s)
		return 0;
	bytes = bpf_get_task_stack(task, s->kstack.ips, MAX_STACK_DEPTH * sizeof(u64), 0);
	if (bytes <= 0) {
		count(C_KSTACK_ERR, 1);
		return 0;
	}
	s->kstack.len = bytes / sizeof(u64);
	return store_stack(&kstacks, hash_stack(&s->kstack), &s->kstack, C_KSTACK_ERR, seen);
}

static __always_inline void on_wake(struct task_struct *next)
{
	struct pending *p = bpf_task_storage_get(&pend, next, 0, 0);
	struct block *b;
	u64 delta, now, start;

	if (!p || p->ts == 0)
		return;
	now = bpf_ktime_get_ns();
	start = p->ts;
	delta = now - start;
	p->ts = 0;
	if (delta < cfg.min_block_ns) {
		count(C_SHORT, 1);
		return;
	}
	p->key.kstack = kernel_stack(next, &p->seen_kstack);
	b = bpf_ringbuf_reserve(&blocks, sizeof(*b), 0);
	if (!b) {
		count(C_RING_FULL, 1);
		count(C_RING_FULL_NS, delta);
		return;
	}
	b->start_ns = start;
	b->dur_ns = delta;
	b->key = p->key;
	BPF_CORE_READ_STR_INTO(&b->comm, next, comm);
	b->waker = p->waker;
	b->runnable = p->runnable;
	if (p->waker == WAKER_SEEN) {
		b->wkey = p->wkey;
		__builtin_memcpy(b->wcomm, p->wcomm, sizeof(b->wcomm));
	} else if (p->waker == WAKER_NONE) {
		count(C_NO_WAKER, 1);
	}
	bpf_ringbuf_submit(b, BPF_RB_NO_WAKEUP);
	count(C_COUNTED, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(kiln_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Preempted threads (and threads that yield) are runnable, not blocked: their
	 * wait for a CPU is recorded apart, and only when asked for (cfg.runnable). */
	if (!preempt && prev_state != 0) {
		if (!cfg.no_blocked)
			on_sleep(ctx, prev, 0);
	} else if (cfg.runnable) {
		on_sleep(ctx, prev, 1);
	}
	on_wake(next);
	return 0;
}

/*
 * A traced thread that is blocked is being woken: the current task woke it.
 * sched_waking, not sched_wakeup: the wake-up of a task whose CPU is idle is
 * queued to that CPU and completed there from the idle task, where
 * sched_wakeup fires; sched_waking fires in the waker, before the queueing.
 * Keep the waker's stacks (kernel stack by hash, user side as a blocked
 * thread's) for the block's record, once per block. Blocks that already
 * lasted less than min_block_ns when woken skip it (they are most likely
 * too short to be recorded).
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(kiln_wakeup, struct task_struct *p)
{
	struct pending *pd = bpf_task_storage_get(&pend, p, 0, 0);
	struct task_struct *cur;
	struct scratch *s;
	u32 cpu, flags, wtgid;
	long bytes;

	if (!pd || pd->ts == 0 || pd->waker != WAKER_NONE)
		return 0;
	if (bpf_ktime_get_ns() - pd->ts < cfg.min_block_ns)
		return 0;
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!s)
		return 0;
	cur = bpf_get_current_task_btf();
	wtgid = BPF_CORE_READ(cur, tgid);
	flags = BPF_CORE_READ(cur, flags);
	pd->wkey.tgid = wtgid;
	pd->wkey.pid = BPF_CORE_READ(cur, pid);
	pd->wkey.kstack = 0;
	pd->wkey.ustack = 0;
	pd->wkey.caller_hash = 0;
	BPF_CORE_READ_STR_INTO(&pd->wcomm, cur, comm);
	bytes = bpf_get_stack(ctx, s->kstack.ips, MAX_STACK_DEPTH * sizeof(u64), 0);
	if (bytes > 0) {
		s->kstack.len = bytes / sizeof(u64);
		pd->wkey.kstack = store_stack(&kstacks, hash_stack(&s->kstack), &s->kstack, C_KSTACK_ERR, 0);
	}
	if (wtgid != 0 && !(flags & PF_KTHREAD)) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(cur);
		struct ranges *r = bpf_map_lookup_elem(&code, &wtgid);

		if (regs) {
			u64 ip = BPF_CORE_READ(regs, ip), sp = BPF_CORE_READ(regs, sp),
			    bp = BPF_CORE_READ(regs, bp);

			pd->wkey.ustack = user_stack(s, r, ip, bp, 0);
			pd->wkey.caller_hash = caller_hash(s, r, sp, bp) ^ kind_hash(cur);
			snapshot(s, &pd->wkey, ip, sp, bp, 0);
		}
	}
	pd->waker = WAKER_SEEN;
	count(C_WAKERS, 1);
	return 0;
}

/* Processes started by traced processes are traced too (a started command's
 * children, a server's workers), as perf's inherited events follow them. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kiln_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 ptgid, ctgid;
	u8 one = 1;

	if (!cfg.filter_pids)
		return 0;
	ptgid = BPF_CORE_READ(parent, tgid);
	ctgid = BPF_CORE_READ(child, tgid);
	if (ctgid != ptgid && bpf_map_lookup_elem(&pids, &ptgid))
		bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY);
	return 0;
}

/* A traced process that ends leaves the filter (which holds 4096). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kiln_exit, struct task_struct *p)
{
	u32 tgid, pid;

	if (!cfg.filter_pids)
		return 0;
	tgid = BPF_CORE_READ(p, tgid);
	pid = BPF_CORE_READ(p, pid);
	if (pid == tgid)
		bpf_map_delete_elem(&pids, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
