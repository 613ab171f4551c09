// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Samples with complete stacks, unwound in the kernel at sample time.
//
// Attached to the recorder's perf events -- sampling events (cpu-clock,
// page-faults) through the perf_event programs, tracepoints (mmap, brk,
// syscalls:*, sched:*) through the tracepoint programs -- it runs on every
// sample, in the sampled thread's context, and writes one record per sample to
// a ring buffer: the kernel stack, the user stack as return addresses, and the
// sample's value (its period, or the tracepoint field user space asked for).
// It returns 0, so perf writes no sample of its own -- except for processes it
// has no tables for yet (just started, just exec'd): it returns 1 and perf
// writes its usual sample with a copy of the stack, which user space unwinds
// after the fact.
//
// A tracepoint program runs for every hit of its tracepoint on the machine,
// not only the recorded processes' (the kernel attaches it to the tracepoint,
// whichever of its perf events it was given): hits of processes without
// tables return 1 at once, so perf goes on as if the program were not there.
//
// The user stack is unwound here, while the thread's memory is exactly as it
// was when the sample was taken:
//   * code in an ELF image with an unwind table (built by user space from the
//     image's .eh_frame, see unwind_table.rs) follows its CFI rows;
//   * any other code (JIT code: the BEAM with +JPperf true, V8 with
//     --perf-basic-prof; images without tables) follows frame pointers.
// This is what makes mixed stacks complete: Debian's beam.smp has no frame
// pointers in its C code but CFI for it, while its JIT code has frame
// pointers and keeps its frames on the Erlang process's own stack, far from
// the C stack. A copy of the stack taken at sample time and unwound later
// cannot reach those frames; reading them here can.
//
// For a CPython process (user space gives its interpreter's layout, see
// python.rs in kiln-record), the sampled thread's Python frames are read too,
// at the same instant: the thread's PyThreadState (found in the interpreter's
// list of threads by its pthread_self(), which is the thread's fs base, and
// remembered per thread), then its chain of frames from the innermost out.
// Each frame is written as its code object's address and where it stood in
// its bytecode; user space names them and puts them in place of the
// interpreter's evaluation-loop frames of the native stack.

#include "kiln_kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MAX_KERNEL 127
#define MAX_USER 128
#define MAX_MAPS 256
#define MAP_STEPS 9    /* log2(MAX_MAPS) + 1 */
#define ROW_STEPS 25   /* up to 2^24 rows per image */
#define MAX_PY 128     /* Python frames per sample */
#define MAX_PY_THREADS 1024 /* thread states looked through to find a thread's */
#define PY_BUF 128     /* bytes of a Python frame read at once (user space's frame_len) */
#define PY_NONE 0xffff /* an offset the interpreter's version does not have */
#define PY_RECHECK_NS 100000000ULL /* a thread without a Python state is looked for again after */

/* Keep in sync with unwind_table.rs (RowKind) and sampler.rs. */
enum row_kind { ROW_NONE = 0, ROW_CFA_RSP = 1, ROW_CFA_RBP = 2, ROW_PLT = 3, ROW_END = 4 };

/* Why a user stack ended. Keep in sync with sampler.rs (StackEnd). */
enum stack_end {
	END_ROOT = 0,      /* CFI says outermost frame (rip undefined) */
	END_FP_ZERO,       /* a frame-pointer frame with rbp == 0: the root of JIT/fp code */
	END_RA_ZERO,       /* a return address of 0 */
	END_READ,          /* stack memory unreadable */
	END_NO_RULE,       /* code with no unwind rule and no usable frame pointer */
	END_DEPTH,         /* MAX_USER frames */
	END_NO_USER,       /* kernel thread, or no user registers */
	END_LOOP,          /* a frame-pointer chain that did not move up the stack */
	END_BAD_RA,        /* a return address outside the process's code: the walk left real frames */
	END_INCOMPLETE,    /* code of a mapped file the tables do not list yet (never written out) */
};

/* How the Python part of a sample ended. Keep in sync with sampler.rs (PyEnd). */
enum py_end {
	PY_NOT_PYTHON = 0, /* no interpreter layout for this process */
	PY_ROOT,           /* the outermost frame was reached */
	PY_NO_INTERP,      /* the runtime has no interpreter (yet) */
	PY_NO_THREAD,      /* the thread has no Python thread state */
	PY_READ,           /* the interpreter's memory could not be read */
	PY_DEPTH,          /* MAX_PY frames (or the record's room) were taken */
};

/* Keep in sync with sampler.rs (Counter). */
enum counter {
	C_SAMPLES = 0,   /* program runs */
	C_WRITTEN,       /* records written */
	C_LOST,          /* records lost: ring buffer full */
	C_NO_TABLES,     /* samples of processes without tables yet: left to perf (stack copy) */
	C_CFI_FRAMES,    /* frames unwound with CFI rows */
	C_FP_FRAMES,     /* frames unwound with frame pointers */
	C_JIT_PROLOGUE,  /* first frames in JIT prologues/epilogues handled */
	C_STALE_TABLES,  /* samples of a process that exec'd after its tables were stored */
	C_INCOMPLETE,    /* samples through a file's code the tables do not list yet: left to perf */
	C_MAX,
};

struct row {
	u64 pc;
	s32 cfa_off;
	s16 rbp_off;
	u8 kind;
	u8 arg;
};

struct mapping {
	u64 start;
	u64 end;
	u64 bias;       /* stated address = runtime address - bias */
	u32 row_start;
	u32 row_count;
};

struct proc {
	/* The address space the mappings belong to: 0 as user space stores them,
	 * set by the first sample that uses them. A later sample from another
	 * address space (the process exec'd since) must not use them. */
	u64 mm;
	u32 n;
	u32 pad;
	struct mapping m[MAX_MAPS];
};

struct hdr {
	u32 pid;
	u32 tid;
	u64 time;
	u32 cpu;
	u16 nkernel;
	u16 nuser;
	u32 end;
	u16 slot;      /* which program (event) took the sample */
	u16 flags;     /* F_* below */
	u64 value;     /* the sample's period, or a tracepoint's field */
	u16 npy;       /* Python frames after the user frames, two words each */
	u16 pyend;     /* enum py_end */
	u32 pad2;
};

/* The walk went through code the tables do not list (found executable in the
 * process's memory map): user space should read the process's mappings again. */
#define F_UNLISTED_CODE 1

#define REC_WORDS (MAX_KERNEL + 1 + MAX_USER + 2 * MAX_PY)
_Static_assert((REC_WORDS & (REC_WORDS - 1)) == 0, "REC_WORDS is a power of two");

struct record {
	struct hdr h;
	u64 ips[REC_WORDS];
};

/*
 * Where a CPython process keeps its threads and frames: the runtime's address and
 * the offsets of its version's structures (python.rs in kiln-record builds it;
 * keep in sync with sampler.rs, PythonLayout). Offsets are of fields in the
 * structure named; PY_NONE where the version has no such field.
 */
struct py_proc {
	u64 head_addr;        /* address of _PyRuntime.interpreters.head */
	u16 interp_threads;   /* PyInterpreterState: its first PyThreadState */
	u16 tstate_next;      /* PyThreadState.next */
	u16 tstate_thread;    /* PyThreadState.thread_id: pthread_self(), the fs base */
	u16 tstate_frame;     /* PyThreadState: the frame (3.10, 3.13+) or the _PyCFrame */
	u16 cframe_frame;     /* _PyCFrame.current_frame (3.11, 3.12), or PY_NONE */
	u16 frame_code;       /* frame: its code object */
	u16 frame_previous;   /* frame: the caller's frame */
	u16 frame_instr;      /* frame: the instruction pointer, or an index (3.10's f_lasti) */
	u16 frame_entry;      /* frame: is_entry (3.11), or PY_NONE */
	u16 frame_owner;      /* frame: owner (3.11+), or PY_NONE */
	u16 frame_len;        /* bytes to read of a frame: past its last field above */
	u8 instr_is_index;    /* frame_instr is a 4-byte index, not a pointer */
	u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct py_proc);
} pyprocs SEC(".maps");

/* Each thread's PyThreadState, found once (0: none, looked for at `checked`). */
struct py_thread {
	u64 tstate;
	u64 checked;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct py_thread);
} pythreads SEC(".maps");

/* A frame's bytes, read at once (8 spare bytes for a field at the last offset),
 * and the values of the walk of a thread's frames. */
struct py_buf {
	u8 b[PY_BUF + 8];
	u64 frame;     /* the next frame to read */
	u32 slot;      /* the next word of rec->ips */
	u32 n;         /* frames written */
	u32 end;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct py_buf);
} pyscratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* user space sets the capacity */
	__type(key, u32);
	__type(value, struct row);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23); /* user space may resize */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct record);
} scratch SEC(".maps");

KILN_COUNTERS(C_MAX)

/* Per tracepoint slot: the byte offset of the 8-byte field whose value the
 * records carry (mmap's len, brk's ret), or 0 for none. Set before loading. */
const volatile u32 tp_value_off[4] = {};

/* The perf_event program context (linux/bpf_perf_event.h): the interrupted
 * registers as the x86-64 user ABI lays them out (asm/ptrace.h), which is
 * fixed. Declared as words so that every access is the full 8-byte load the
 * verifier allows on this context. */
struct kiln_perf_event_data {
	u64 regs[21];
	u64 sample_period;
	u64 addr;
};
#define PT_BP 4
#define PT_IP 16
#define PT_CS 17
#define PT_SP 19

/*
 * The walk's values are kept in map memory, its pointers on the stack: the
 * verifier knows nothing of what it reads back from a map, so every step of
 * the loop starts alike to it and its check of the loop ends at once. With the
 * values on the stack, each frame count and flag a step left was a new state
 * to explore: Linux 6.18's verifier gave up at a million instructions.
 */
struct walk_vals {
	u64 ip, sp, bp;
	u32 base;      /* index of the first user slot in rec->ips */
	u32 n;         /* user frames written */
	u32 end;
	u32 prev_fp;   /* the previous frame was unwound by frame pointers */
	u64 cfi;
	u64 fp;
	u64 prologue;
	u32 flags;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct walk_vals);
} walks SEC(".maps");

struct walk {
	struct task_struct *task;
	struct record *rec;
	struct proc *proc;
	struct walk_vals *v;
};

/* What kind of memory an address lies in (see code_kind). */
enum code_kind { CODE_NONE = 0, CODE_ANON = 1, CODE_FILE = 2 };

static long vma_kind(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	u32 *kind = data;

	if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC))
		*kind = CODE_NONE;
	else if (BPF_CORE_READ(vma, vm_file))
		*kind = CODE_FILE;
	else
		*kind = CODE_ANON;
	return 0;
}

/* For an address the tables do not list: whether it is executable memory of the
 * sampled process, and mapped from a file (a library loaded since the tables were
 * stored: they are behind) or anonymous (JIT code made executable with mprotect,
 * which no perf record announces). */
static __always_inline u32 code_kind(struct walk *w, u64 addr)
{
	u32 kind = CODE_NONE;

	if (!w->task || bpf_find_vma(w->task, addr, vma_kind, &kind, 0))
		return CODE_NONE;
	return kind;
}

static __always_inline int read_u64(u64 addr, u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

/*
 * Binary searches run as bpf_loop callbacks: the verifier checks one step
 * once instead of every path through an unrolled search.
 */
struct map_search {
	struct proc *p;
	u64 pc;
	u32 lo, hi;
};

static long map_search_step(u32 i, void *arg)
{
	struct map_search *s = arg;
	u32 mid;

	if (s->lo >= s->hi)
		return 1;
	mid = s->lo + (s->hi - s->lo) / 2;
	if (s->p->m[mid & (MAX_MAPS - 1)].start <= s->pc)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* The executable mapping that contains pc (with or without an unwind table), or NULL. */
static __always_inline struct mapping *find_mapping(struct proc *p, u64 pc)
{
	struct map_search s = { .p = p, .pc = pc, .lo = 0 };
	u32 idx;

	if (!p)
		return 0;
	s.hi = p->n;
	if (s.hi > MAX_MAPS)
		s.hi = MAX_MAPS;
	bpf_loop(MAP_STEPS + 1, map_search_step, &s, 0);
	if (s.lo == 0)
		return 0;
	idx = (s.lo - 1) & (MAX_MAPS - 1);
	if (pc >= p->m[idx].end)
		return 0;
	return &p->m[idx];
}

struct row_search {
	u64 key;
	u32 lo, hi;
	u32 failed;
};

static long row_search_step(u32 i, void *arg)
{
	struct row_search *s = arg;
	struct row *r;
	u32 mid;

	if (s->lo >= s->hi)
		return 1;
	mid = s->lo + (s->hi - s->lo) / 2;
	r = bpf_map_lookup_elem(&rows, &mid);
	if (!r) {
		s->failed = 1;
		return 1;
	}
	if (r->pc <= s->key)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* The last row of the mapping's table with row.pc <= rel, or NULL. */
static __always_inline struct row *find_row(struct mapping *m, u64 rel)
{
	struct row_search s = { .key = rel, .lo = m->row_start, .failed = 0 };
	u32 idx;

	s.hi = m->row_start + m->row_count;
	bpf_loop(ROW_STEPS + 1, row_search_step, &s, 0);
	if (s.failed || s.lo == m->row_start)
		return 0;
	idx = s.lo - 1;
	return bpf_map_lookup_elem(&rows, &idx);
}

/*
 * The first frame in code without CFI may be in a function's prologue or
 * epilogue, where rbp still (or again) holds the caller's frame: the return
 * address is then on top of the stack, not at rbp + 8. JIT compilers emit
 * the canonical sequences (the BEAM: push rbp; mov rbp,rsp ... leave; ret or
 * leave; jmp), so the bytes around ip tell. Returns 1 if handled.
 */
static __always_inline int jit_edge(struct walk *w)
{
	u8 b[16];
	u64 ra, skip = 0;
	int leave = 0;

	if (bpf_probe_read_user(b, sizeof(b), (void *)(w->v->ip - 8)))
		return 0;
	/* b[8] is the byte at ip, the first of an instruction. */
	if (b[8] == 0x55 || b[8] == 0xc3) {
		/* at push rbp, or at ret */
		skip = 0;
	} else if (b[7] == 0x55 && b[8] == 0x48 && b[9] == 0x89 && b[10] == 0xe5) {
		/* after push rbp, at mov rbp,rsp */
		skip = 8;
	} else if (b[7] == 0xc9 || (b[4] == 0xc9 && b[5] == 0x49 && b[6] == 0xff && b[7] == 0xce)) {
		/* right after leave, or after the BEAM's leave; dec r14 (reduction
		 * count) at the branch that follows. 0xc9 also ends other
		 * instructions (xor ecx,ecx), so these need a return address that
		 * points into code to be believed. */
		leave = 1;
	} else {
		return 0;
	}
	if (read_u64(w->v->sp + skip, &ra))
		return 0;
	if (leave && (ra == 0 || !find_mapping(w->proc, ra - 1)))
		return 0;
	w->v->sp += skip + 8;
	w->v->ip = ra;
	w->v->prologue++;
	return 1;
}

static long step(u32 i, void *arg)
{
	struct walk *w = arg;
	struct mapping *m;
	struct row *r = 0;
	u64 pc, slot, cfa, ra, nbp;

	slot = w->v->base + w->v->n;
	if (slot >= MAX_KERNEL + 1 + MAX_USER) {
		w->v->end = END_DEPTH;
		return 1;
	}
	pc = w->v->n == 0 ? w->v->ip : w->v->ip - 1;
	m = find_mapping(w->proc, pc);
	if (!m && w->proc) {
		u32 kind = code_kind(w, pc);

		if (kind == CODE_FILE) {
			/* A library mapped since the tables were stored: without its
			 * unwind rows the walk would stop or go astray here. The
			 * sample is left to perf (a stack copy), and the records of
			 * the new mapping bring the tables up to date. */
			w->v->end = END_INCOMPLETE;
			return 1;
		}
		if (kind == CODE_ANON)
			w->v->flags |= F_UNLISTED_CODE;
		else if (w->v->n > 0 && w->v->prev_fp) {
			/* A frame-pointer walk read something that is not a return address. */
			w->v->end = END_BAD_RA;
			return 1;
		}
	}
	w->rec->ips[slot] = w->v->ip;
	w->v->n++;

	if (m && m->row_count)
		r = find_row(m, pc - m->bias);
	if (r && r->kind == ROW_END) {
		w->v->end = END_ROOT;
		return 1;
	}
	if (r && r->kind != ROW_NONE) {
		if (r->kind == ROW_CFA_RSP)
			cfa = w->v->sp + (s64)r->cfa_off;
		else if (r->kind == ROW_CFA_RBP)
			cfa = w->v->bp + (s64)r->cfa_off;
		else /* ROW_PLT */
			cfa = w->v->sp + 8 + ((w->v->ip & 15) >= r->arg ? 8 : 0);
		if (read_u64(cfa - 8, &ra)) {
			w->v->end = END_READ;
			return 1;
		}
		if (r->rbp_off != 0 && read_u64(cfa + (s64)r->rbp_off, &w->v->bp)) {
			w->v->end = END_READ;
			return 1;
		}
		w->v->sp = cfa;
		w->v->ip = ra;
		w->v->prev_fp = 0;
		w->v->cfi++;
	} else {
		if (w->v->n == 1 && !(m && m->row_count) && w->proc && jit_edge(w))
			goto next;
		if (w->v->bp == 0) {
			w->v->end = END_FP_ZERO;
			return 1;
		}
		if (w->v->bp & 7) {
			w->v->end = END_NO_RULE;
			return 1;
		}
		if (read_u64(w->v->bp + 8, &ra) || read_u64(w->v->bp, &nbp)) {
			w->v->end = END_READ;
			return 1;
		}
		/* Frames of one stack are chained towards higher addresses. */
		if (w->v->prev_fp && nbp != 0 && nbp <= w->v->bp) {
			w->v->end = END_LOOP;
			return 1;
		}
		w->v->sp = w->v->bp + 16;
		w->v->bp = nbp;
		w->v->ip = ra;
		w->v->prev_fp = 1;
		w->v->fp++;
	}
next:
	if (w->v->ip == 0) {
		w->v->end = END_RA_ZERO;
		return 1;
	}
	return 0;
}

/*
 * Python frames.
 */

/* The thread's fs base: on x86-64 glibc and musl, what pthread_self() returns,
 * which CPython keeps in each PyThreadState.thread_id. */
struct thread_struct___py {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct___py {
	struct thread_struct___py thread;
} __attribute__((preserve_access_index));

struct py_search {
	struct py_proc *cfg;
	u64 tstate;     /* the one being looked at; the thread's when found */
	u64 want;       /* the thread's pthread_self() */
	u32 found;
	u32 failed;
};

static long py_thread_step(u32 i, void *arg)
{
	struct py_search *s = arg;
	u64 id = 0;

	if (s->tstate == 0)
		return 1;
	if (read_u64(s->tstate + s->cfg->tstate_thread, &id)) {
		s->failed = 1;
		return 1;
	}
	if (id == s->want) {
		s->found = 1;
		return 1;
	}
	if (read_u64(s->tstate + s->cfg->tstate_next, &s->tstate)) {
		s->failed = 1;
		return 1;
	}
	return 0;
}

/* The sampled thread's PyThreadState (0: none), or the reason there is none. */
static __always_inline u64 py_thread_state(struct py_proc *cfg, u32 tid, u32 *end)
{
	struct task_struct___py *task = (void *)bpf_get_current_task_btf();
	struct py_search s = { .cfg = cfg };
	struct py_thread *known, fresh = {};
	u64 interp = 0, now = bpf_ktime_get_ns(), id = 0;

	if (!task) {
		*end = PY_NO_THREAD;
		return 0;
	}
	s.want = BPF_CORE_READ(task, thread.fsbase);
	known = bpf_map_lookup_elem(&pythreads, &tid);
	if (known && known->tstate) {
		/* Still this thread's (a thread state is freed when its thread ends). */
		if (!read_u64(known->tstate + cfg->tstate_thread, &id) && id == s.want)
			return known->tstate;
	} else if (known && now - known->checked < PY_RECHECK_NS) {
		*end = PY_NO_THREAD;
		return 0;
	}
	if (read_u64(cfg->head_addr, &interp)) {
		*end = PY_READ;
		return 0;
	}
	if (interp == 0) {
		*end = PY_NO_INTERP;
		return 0;
	}
	if (read_u64(interp + cfg->interp_threads, &s.tstate)) {
		*end = PY_READ;
		return 0;
	}
	bpf_loop(MAX_PY_THREADS, py_thread_step, &s, 0);
	if (s.failed) {
		*end = PY_READ;
		return 0;
	}
	fresh.tstate = s.found ? s.tstate : 0;
	fresh.checked = now;
	bpf_map_update_elem(&pythreads, &tid, &fresh, BPF_ANY);
	if (!s.found)
		*end = PY_NO_THREAD;
	return fresh.tstate;
}

struct py_walk {
	struct record *rec;
	struct py_proc *cfg;
	struct py_buf *buf;  /* the frame read, and the walk's values (see struct walk) */
};

/* The 8 bytes at `off` of the frame read into the buffer. */
static __always_inline u64 py_field(struct py_buf *buf, u32 off)
{
	u64 v;

	__builtin_memcpy(&v, &buf->b[off & (PY_BUF - 1)], sizeof(v));
	return v;
}

static long py_step(u32 i, void *arg)
{
	struct py_walk *w = arg;
	struct py_proc *c = w->cfg;
	u32 len = c->frame_len, slot = w->buf->slot, next;
	u64 code, instr, word;

	if (w->buf->frame == 0) {
		w->buf->end = PY_ROOT;
		return 1;
	}
	if (slot + 1 >= REC_WORDS) {
		w->buf->end = PY_DEPTH;
		return 1;
	}
	if (len > PY_BUF)
		len = PY_BUF;
	if (len < 8)
		len = 8;
	if (bpf_probe_read_user(w->buf->b, len, (void *)w->buf->frame)) {
		w->buf->end = PY_READ;
		return 1;
	}
	code = py_field(w->buf, c->frame_code);
	instr = py_field(w->buf, c->frame_instr);
	/* Where the frame stood: an index (3.10), or the instruction pointer as an
	 * offset from its code object, whose bytecode it lies in. */
	word = (c->instr_is_index ? instr : instr - code) & 0xffffffff;
	if (c->frame_entry != PY_NONE)
		word |= (py_field(w->buf, c->frame_entry) & 0xff) << 32;
	if (c->frame_owner != PY_NONE)
		word |= (py_field(w->buf, c->frame_owner) & 0xff) << 40;
	/* REC_WORDS is a power of two: the masks only show the verifier the bound
	 * (the empty asm keeps the compiler from dropping them as redundant). */
	next = slot + 1;
	asm volatile("" : "+r"(slot), "+r"(next));
	w->rec->ips[slot & (REC_WORDS - 1)] = code;
	w->rec->ips[next & (REC_WORDS - 1)] = word;
	slot = next;
	w->buf->slot = slot + 1;
	w->buf->n++;
	w->buf->frame = py_field(w->buf, c->frame_previous);
	return 0;
}

/*
 * Appends the thread's Python frames to the record, innermost first. A global
 * function: the verifier checks it once, whatever the states of its callers
 * (inlined, its loops were checked again for each of them, past the limit).
 */
__noinline int python_frames(struct record *rec, u32 tgid, u32 tid)
{
	struct py_walk w = {};
	u32 zero = 0, end = PY_ROOT;
	u64 tstate, frame = 0;

	if (!rec)
		return 0;
	w.rec = rec;
	w.cfg = bpf_map_lookup_elem(&pyprocs, &tgid);
	if (!w.cfg)
		return 0;
	w.buf = bpf_map_lookup_elem(&pyscratch, &zero);
	if (!w.buf)
		return 0;
	tstate = py_thread_state(w.cfg, tid, &end);
	if (!tstate) {
		rec->h.pyend = end;
		return 0;
	}
	if (read_u64(tstate + w.cfg->tstate_frame, &frame) ||
	    (w.cfg->cframe_frame != PY_NONE && frame &&
	     read_u64(frame + w.cfg->cframe_frame, &frame))) {
		rec->h.pyend = PY_READ;
		return 0;
	}
	w.buf->frame = frame;
	w.buf->n = 0;
	w.buf->slot = (u32)rec->h.nkernel + rec->h.nuser;
	w.buf->end = PY_DEPTH;
	bpf_loop(MAX_PY, py_step, &w, 0);
	rec->h.npy = w.buf->n;
	rec->h.pyend = w.buf->end;
	return w.buf->n;
}

/* The value of a tracepoint slot: the 8-byte field at the offset user space set. */
static __always_inline u64 tp_value(void *ctx, u32 slot)
{
	u32 off = tp_value_off[slot & 3];
	u64 v = 1;

	if (off != 0 && off < 4096)
		bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off);
	return v;
}

/*
 * One sample, from either kind of program (tp: a tracepoint's, a constant
 * once inlined). in_user: the sample interrupted user mode, and ip/sp/bp are
 * the user's registers; otherwise they are read from those the thread saved
 * when it entered the kernel.
 */
static __always_inline int sample_common(void *ctx, u32 slot, const int tp, int in_user,
					 u64 ip, u64 sp, u64 bp)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, zero = 0;
	struct task_struct *task;
	struct record *rec;
	struct walk w = {};
	long got;
	u64 size;

	if (tp) {
		/* Every hit on the machine comes here: leave the others at once. */
		w.proc = bpf_map_lookup_elem(&procs, &tgid);
		if (!w.proc)
			return 1;
	}
	count(C_SAMPLES, 1);
	w.v = bpf_map_lookup_elem(&walks, &zero);
	if (!w.v)
		return 0;
	__builtin_memset(w.v, 0, sizeof(*w.v));
	w.v->end = END_NO_USER;
	w.v->ip = ip;
	w.v->sp = sp;
	w.v->bp = bp;
	if (!in_user) {
		task = bpf_get_current_task_btf();
		if (task && !(BPF_CORE_READ(task, flags) & PF_KTHREAD)) {
			struct pt_regs *u = (struct pt_regs *)bpf_task_pt_regs(task);

			if (u) {
				w.v->ip = BPF_CORE_READ(u, ip);
				w.v->sp = BPF_CORE_READ(u, sp);
				w.v->bp = BPF_CORE_READ(u, bp);
			}
		}
	}
	if (w.v->ip != 0 && tgid != 0) {
		if (!tp)
			w.proc = bpf_map_lookup_elem(&procs, &tgid);
		if (w.proc) {
			u64 mm;

			task = bpf_get_current_task_btf();
			mm = task ? (u64)BPF_CORE_READ(task, mm) : 0;
			if (w.proc->mm == 0)
				w.proc->mm = mm;
			else if (w.proc->mm != mm) {
				count(C_STALE_TABLES, 1);
				w.proc = 0;
			}
		}
		if (!w.proc) {
			/* No tables for this address space yet (the process just
			 * started, or exec'd): let perf write its own sample, with a
			 * copy of the stack that user space unwinds after the fact. */
			count(C_NO_TABLES, 1);
			return 1;
		}
	}
	rec = bpf_map_lookup_elem(&scratch, &zero);
	if (!rec)
		return 0;
	rec->h.pid = tgid;
	rec->h.tid = (u32)id;
	rec->h.time = bpf_ktime_get_ns();
	rec->h.cpu = bpf_get_smp_processor_id();
	rec->h.nkernel = 0;
	rec->h.nuser = 0;
	rec->h.slot = slot;
	rec->h.flags = 0;
	rec->h.npy = 0;
	rec->h.pyend = PY_NOT_PYTHON;
	rec->h.value = tp ? tp_value(ctx, slot) : ((struct kiln_perf_event_data *)ctx)->sample_period;
	w.rec = rec;
	if (!in_user) {
		got = bpf_get_stack(ctx, rec->ips, MAX_KERNEL * sizeof(u64), 0);
		if (got > 0)
			rec->h.nkernel = got / sizeof(u64);
	}
	if (w.proc) {
		w.task = bpf_get_current_task_btf();
		w.v->base = rec->h.nkernel;
		if (w.v->base > MAX_KERNEL)
			w.v->base = MAX_KERNEL;
		w.v->end = END_DEPTH;
		bpf_loop(MAX_USER, step, &w, 0);
		if (w.v->end == END_INCOMPLETE) {
			count(C_INCOMPLETE, 1);
			return 1;
		}
		rec->h.nuser = w.v->n;
		rec->h.flags = w.v->flags;
		count(C_CFI_FRAMES, w.v->cfi);
		count(C_FP_FRAMES, w.v->fp);
		count(C_JIT_PROLOGUE, w.v->prologue);
		python_frames(rec, tgid, (u32)id);
	}
	rec->h.end = w.v->end;
	size = sizeof(struct hdr) +
	       ((u64)rec->h.nkernel + rec->h.nuser + 2 * (u64)rec->h.npy) * sizeof(u64);
	if (size > sizeof(*rec))
		size = sizeof(*rec);
	if (bpf_ringbuf_output(&events, rec, size, 0))
		count(C_LOST, 1);
	else
		count(C_WRITTEN, 1);
	return 0;
}

static __always_inline int sample(struct kiln_perf_event_data *ctx, u32 slot)
{
	/* Sampled in user mode: the context registers are the user's. */
	int in_user = (ctx->regs[PT_CS] & 3) == 3;

	return sample_common(ctx, slot, 0, in_user, in_user ? ctx->regs[PT_IP] : 0,
			     in_user ? ctx->regs[PT_SP] : 0, in_user ? ctx->regs[PT_BP] : 0);
}

/* A tracepoint hit: always in the kernel. */
static __always_inline int sample_tp(void *ctx, u32 slot)
{
	return sample_common(ctx, slot, 1, 0, 0, 0, 0);
}

/* One program per event kind: the program, unlike an attach cookie, is
 * inherited by the events the kernel creates for new threads. */
SEC("perf_event")
int kiln_sample0(struct kiln_perf_event_data *ctx) { return sample(ctx, 0); }
SEC("perf_event")
int kiln_sample1(struct kiln_perf_event_data *ctx) { return sample(ctx, 1); }
SEC("perf_event")
int kiln_sample2(struct kiln_perf_event_data *ctx) { return sample(ctx, 2); }
SEC("perf_event")
int kiln_sample3(struct kiln_perf_event_data *ctx) { return sample(ctx, 3); }
SEC("tracepoint")
int kiln_tp0(void *ctx) { return sample_tp(ctx, 0); }
SEC("tracepoint")
int kiln_tp1(void *ctx) { return sample_tp(ctx, 1); }
SEC("tracepoint")
int kiln_tp2(void *ctx) { return sample_tp(ctx, 2); }
SEC("tracepoint")
int kiln_tp3(void *ctx) { return sample_tp(ctx, 3); }

char LICENSE[] SEC("license") = "GPL";
