/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shim.h - the only header the portable pmemlab files (ops.c, gen.c, hist.c,
 * engine.c, place.c) include.  It maps the few things they need onto the
 * kernel or onto libc, so that the same access kernels, address generators,
 * histogram and region set-up compile into the module and into a userspace
 * runner.
 *
 * Userspace builds must compile the portable files with -mgeneral-regs-only
 * (or -mno-sse -mno-avx): the access kernels keep store data in xmm0/ymm0/zmm0
 * across asm statements and never declare SIMD clobbers, exactly as in the
 * kernel, where -mno-sse guarantees that the compiler never uses them.
 */
#ifndef PMEMLAB_SHIM_H
#define PMEMLAB_SHIM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/kernel.h>	/* snprintf */
#else
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;
#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#ifndef READ_ONCE
#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))
#endif
#endif

typedef unsigned __int128 pl_u128;

#endif /* PMEMLAB_SHIM_H */
