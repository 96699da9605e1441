/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shim.h - the only header the portable pmemlab files in core/
 * include.  It maps the few things they need onto the kernel or onto libc,
 * so that the same generated loops (ops.def, walk.h), address generators,
 * histogram, region set-up, run parameters and validator compile into the
 * module and into a userspace runner.
 *
 * Userspace builds must compile the portable files with -mgeneral-regs-only
 * (or -mno-sse -mno-avx): the generated loops keep store data in
 * xmm0/ymm0/zmm0 across asm statements and never declare SIMD clobbers,
 * exactly as in the kernel, where -mno-sse guarantees that the compiler never
 * uses them.
 */
#ifndef PMEMLAB_SHIM_H
#define PMEMLAB_SHIM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/kernel.h>	/* snprintf, vsnprintf, va_list */
#else
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
/* as in the kernel, so that one format (%llu) fits both */
typedef unsigned long long u64;
typedef long long s64;
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif
#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#ifndef READ_ONCE
#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))
#endif
#ifndef __always_inline
#define __always_inline	inline __attribute__((__always_inline__))
#endif
#ifndef noinline
#define noinline	__attribute__((__noinline__))
#endif
#ifndef __maybe_unused
#define __maybe_unused	__attribute__((__unused__))
#endif
#ifndef notrace
#define notrace
#endif
#endif

/*
 * No stack canary in a function: the kernel defines __no_stack_protector
 * from v6.4 ("start_kernel: add no_stack_protector fn attr", also in 6.1.y
 * through stable), so it is keyed on the macro, not on the version; older
 * kernels (5.10) and libc get it here, and with GCC < 11, which lacks the
 * attribute, nothing, as in the kernel's own definition.
 */
#ifndef __no_stack_protector
#if defined(__has_attribute) && __has_attribute(__no_stack_protector__)
#define __no_stack_protector	__attribute__((__no_stack_protector__))
#else
#define __no_stack_protector
#endif
#endif

typedef unsigned __int128 pl_u128;
typedef __int128 pl_s128;

#endif /* PMEMLAB_SHIM_H */
