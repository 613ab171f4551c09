// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Goroutine waits: how long goroutines stayed parked, and where they parked. A goroutine
// that waits on a sync.Mutex, a channel, a select or a timer parks in Go's scheduler and
// leaves its thread free to run others, so no thread blocks and an off-CPU profile of
// threads cannot see the wait (Go's own block profile can, when the program serves it).
//
// Two uprobes on the traced binary's runtime (attached for one process):
//   * runtime.gopark: the running goroutine (register R14 under Go's register ABI) is
//     about to park. Note when, its user stack (Go keeps frame pointers) and its caller
//     (the return address on top of the stack: at the function's first instruction it is
//     in no frame yet, so the frame-pointer walk would skip it).
//   * runtime.ready(gp): goroutine gp (RAX) is made ready to run again. If it has a note, it
//     was parked from then until now: added to the sum of its (stack, caller, waker). The
//     waker is a timer when a frame of the readying thread's stack (frame pointers, a few
//     frames up) is in the runtime's timer code (`timer_lo`/`timer_hi`, set by user
//     space): a goroutine parked on a channel that a timer sends to (time.After, a
//     Ticker) waited for the timer, not for another goroutine.
// The sums stay in the kernel; user space reads them, and the notes of goroutines still
// parked, when the measurement ends. User space may detach the probes and attach them
// again (each hit is a trap: it traces part of the time); a note from before the last
// attach ends nothing (generation).

#include "kiln_kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MAX_STACK_DEPTH 127

/* Keep in sync with goparks.rs (Counter). */
enum counter {
	C_PARKS = 0,     /* parks noted */
	C_RESUMED,       /* parked goroutines seen running again */
	C_STACK_ERR,     /* parks without their stack */
	C_NOTES_FULL,    /* parks not noted: the notes map was full */
	C_SUMS_FULL,     /* waits not added: the sums map was full */
	C_MAX,
};

struct note {
	__u64 t;
	__u64 caller;
	__s32 stack;
	__u32 gen;
};

/* Keep in sync with goparks.rs (WOKEN_BY_TIMER). */
#define WOKEN_BY_TIMER 1
#define TIMER_RANGES 4
#define WAKER_FRAMES 12

struct site {
	__u64 caller;
	__s32 stack;
	__u32 woken; /* WOKEN_BY_TIMER, or 0 */
};

/* The runtime's timer code, as [lo, hi) address ranges in the process (lo 0: unused). */
const volatile __u64 timer_lo[TIMER_RANGES] = {};
const volatile __u64 timer_hi[TIMER_RANGES] = {};

struct sum {
	__u64 ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct note);
} notes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct site);
	__type(value, struct sum);
} sums SEC(".maps");

/* The probes' generation: user space raises it each time it attaches them again, so a
 * note taken before a pause (its goroutine may have been woken unseen) ends nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} generation SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

static __always_inline __u32 current_gen(void)
{
	__u32 zero = 0;
	__u32 *g = bpf_map_lookup_elem(&generation, &zero);
	return g ? *g : 0;
}

SEC("uprobe")
int kiln_gopark(struct pt_regs *ctx)
{
	__u64 g = BPF_CORE_READ(ctx, r14);
	__u64 sp = BPF_CORE_READ(ctx, sp);
	struct note n = {};

	if (!g)
		return 0;
	n.t = bpf_ktime_get_ns();
	n.gen = current_gen();
	if (bpf_probe_read_user(&n.caller, sizeof(n.caller), (void *)sp))
		n.caller = 0;
	n.stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (n.stack < 0)
		count(C_STACK_ERR);
	if (bpf_map_update_elem(&notes, &g, &n, BPF_ANY))
		count(C_NOTES_FULL);
	else
		count(C_PARKS);
	return 0;
}

static __always_inline int in_timer(__u64 ip)
{
	for (int r = 0; r < TIMER_RANGES; r++)
		if (timer_lo[r] && ip >= timer_lo[r] && ip < timer_hi[r])
			return 1;
	return 0;
}

/* Whether the thread readying a goroutine is running a timer: its caller (the return
 * address on top of the stack) or one of the frames above it (Go keeps frame pointers). */
static __always_inline __u32 waker(struct pt_regs *ctx)
{
	__u64 sp = BPF_CORE_READ(ctx, sp);
	__u64 fp = BPF_CORE_READ(ctx, bp);
	__u64 ip = 0;

	if (!timer_lo[0])
		return 0;
	if (!bpf_probe_read_user(&ip, sizeof(ip), (void *)sp) && in_timer(ip))
		return WOKEN_BY_TIMER;
	for (int i = 0; i < WAKER_FRAMES; i++) {
		__u64 frame[2];
		if (!fp || bpf_probe_read_user(frame, sizeof(frame), (void *)fp))
			return 0;
		if (in_timer(frame[1]))
			return WOKEN_BY_TIMER;
		if (frame[0] <= fp)
			return 0;
		fp = frame[0];
	}
	return 0;
}

SEC("uprobe")
int kiln_goready(struct pt_regs *ctx)
{
	__u64 gp = BPF_CORE_READ(ctx, ax);
	struct note *n = bpf_map_lookup_elem(&notes, &gp);
	struct site k = {};
	struct sum *s;
	__u64 now;

	if (!n)
		return 0;
	if (n->gen != current_gen()) {
		bpf_map_delete_elem(&notes, &gp);
		return 0;
	}
	now = bpf_ktime_get_ns();
	k.caller = n->caller;
	k.stack = n->stack;
	k.woken = waker(ctx);
	if (now > n->t) {
		s = bpf_map_lookup_elem(&sums, &k);
		if (s) {
			__sync_fetch_and_add(&s->ns, now - n->t);
			__sync_fetch_and_add(&s->count, 1);
		} else {
			struct sum first = { .ns = now - n->t, .count = 1 };
			if (bpf_map_update_elem(&sums, &k, &first, BPF_NOEXIST)) {
				s = bpf_map_lookup_elem(&sums, &k);
				if (s) {
					__sync_fetch_and_add(&s->ns, now - n->t);
					__sync_fetch_and_add(&s->count, 1);
				} else {
					count(C_SUMS_FULL);
				}
			}
		}
	}
	bpf_map_delete_elem(&notes, &gp);
	count(C_RESUMED);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
