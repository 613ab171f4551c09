/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * The few kernel types the programs touch, written here by hand instead of
 * a full vmlinux.h: building needs no bpftool and no BTF on the build machine.
 * Every struct carries preserve_access_index, so the field offsets below are
 * only names: libbpf relocates each access against the running kernel's BTF
 * (CO-RE) when the program is loaded.
 */
#ifndef KILN_KERNEL_H
#define KILN_KERNEL_H

#include <linux/types.h>
#include <linux/bpf.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;
typedef __u64 u64;
typedef _Bool bool;

#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

struct mm_struct;

#define VM_EXEC 0x00000004

struct file;

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;
	struct file *vm_file;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	char comm[16];
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

#if defined(__TARGET_ARCH_x86)
/* x86-64 register frame saved on kernel entry (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
} __attribute__((preserve_access_index));
#define KILN_REG_IP(r) ((r)->ip)
#define KILN_REG_SP(r) ((r)->sp)
#define KILN_REG_FP(r) ((r)->bp)
#else
#error "kiln-bpf: only x86-64 is supported so far (pt_regs layout)"
#endif

/*
 * Per-CPU u64 counters: KILN_COUNTERS(N) declares the map `counters` (N slots,
 * summed over CPUs by user space) and count(which, by). Needs bpf_helpers.h.
 */
#define KILN_COUNTERS(n)                                                      \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                      \
		__uint(max_entries, n);                                       \
		__type(key, u32);                                             \
		__type(value, u64);                                           \
	} counters SEC(".maps");                                              \
	static __always_inline void count(u32 which, u64 by)                  \
	{                                                                     \
		u64 *c = bpf_map_lookup_elem(&counters, &which);              \
		if (c)                                                        \
			*c += by;                                             \
	}

#endif
