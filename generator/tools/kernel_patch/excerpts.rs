//! Pristine excerpts of the files the glue edits, per kernel version, as
//! Debian's linux-source-6.1 and linux-source-6.12 ship them (first line
//! number, text). The patch is the difference between an excerpt and its
//! edited copy, so its context lines are the tree's own.

use crate::kernel::version::KernelVersion;

/// A run of lines of `path` starting at line `line` (1-based).
#[derive(Debug, Clone, Copy)]
pub struct Excerpt {
    pub path: &'static str,
    pub line: usize,
    pub text: &'static str,
}

pub fn x86_64_uaccess(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/x86/include/asm/uaccess_64.h",
            line: 43,
            text: r#"				     "=d" (len)),
			 "1" (to), "2" (from), "3" (len)
			 : "memory", "rcx", "r8", "r9", "r10", "r11");
	return ret;
}

static __always_inline __must_check unsigned long
raw_copy_from_user(void *dst, const void __user *src, unsigned long size)
{
	return copy_user_generic(dst, (__force void *)src, size);
}

static __always_inline __must_check unsigned long
raw_copy_to_user(void __user *dst, const void *src, unsigned long size)
{
	return copy_user_generic((__force void *)dst, src, size);
}

extern long __copy_user_nocache(void *dst, const void __user *src,
				unsigned size, int zerorest);
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/x86/include/asm/uaccess_64.h",
            line: 132,
            text: r#"		:"+c" (len), "+D" (to), "+S" (from), ASM_CALL_CONSTRAINT
		: : "memory", "rax");
	clac();
	return len;
}

static __always_inline __must_check unsigned long
raw_copy_from_user(void *dst, const void __user *src, unsigned long size)
{
	return copy_user_generic(dst, (__force void *)src, size);
}

static __always_inline __must_check unsigned long
raw_copy_to_user(void __user *dst, const void *src, unsigned long size)
{
	return copy_user_generic((__force void *)dst, src, size);
}

#define copy_to_nontemporal copy_to_nontemporal
extern size_t copy_to_nontemporal(void *dst, const void *src, size_t size);
"#,
        },
    }
}

/// 6.12's inline `copy_user_generic()` up to its constraints (the lines
/// before [`x86_64_uaccess`]'s 6.12 excerpt).
pub fn x86_64_copy_user_generic_6_12() -> Excerpt {
    Excerpt {
        path: "arch/x86/include/asm/uaccess_64.h",
        line: 114,
        text: r#"/* Handles exceptions in both to and from, but doesn't do access_ok */
__must_check unsigned long
rep_movs_alternative(void *to, const void *from, unsigned len);

static __always_inline __must_check unsigned long
copy_user_generic(void *to, const void *from, unsigned long len)
{
	stac();
	/*
	 * If CPU has FSRM feature, use 'rep movs'.
	 * Otherwise, use rep_movs_alternative.
	 */
	asm volatile(
		"1:\n\t"
		ALTERNATIVE("rep movsb",
			    "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))
		"2:\n"
		_ASM_EXTABLE_UA(1b, 2b)
"#,
    }
}

pub fn x86_64_makefile(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/x86/lib/Makefile",
            line: 66,
            text: r#"else
        obj-y += iomap_copy_64.o
ifneq ($(CONFIG_GENERIC_CSUM),y)
        lib-y += csum-partial_64.o csum-copy_64.o csum-wrappers_64.o
endif
        lib-y += clear_page_64.o copy_page_64.o
        lib-y += memmove_64.o memset_64.o
        lib-y += copy_user_64.o
	lib-y += cmpxchg16b_emu.o
endif
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/x86/lib/Makefile",
            line: 54,
            text: r#"endif
else
ifneq ($(CONFIG_GENERIC_CSUM),y)
        lib-y += csum-partial_64.o csum-copy_64.o csum-wrappers_64.o
endif
        lib-y += clear_page_64.o copy_page_64.o
        lib-y += memmove_64.o memset_64.o
        lib-y += copy_user_64.o copy_user_uncached_64.o
	lib-y += cmpxchg16b_emu.o
endif
"#,
        },
    }
}

pub fn i386_uaccess(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/x86/include/asm/uaccess_32.h",
            line: 12,
            text: r#"unsigned long __must_check __copy_user_ll
		(void *to, const void *from, unsigned long n);
unsigned long __must_check __copy_from_user_ll_nocache_nozero
		(void *to, const void __user *from, unsigned long n);

static __always_inline unsigned long __must_check
raw_copy_to_user(void __user *to, const void *from, unsigned long n)
{
	return __copy_user_ll((__force void *)to, from, n);
}

static __always_inline unsigned long
raw_copy_from_user(void *to, const void __user *from, unsigned long n)
{
	return __copy_user_ll(to, (__force const void *)from, n);
}

static __always_inline unsigned long
__copy_from_user_inatomic_nocache(void *to, const void __user *from,
				  unsigned long n)
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/x86/include/asm/uaccess_32.h",
            line: 12,
            text: r#"unsigned long __must_check __copy_user_ll
		(void *to, const void *from, unsigned long n);
unsigned long __must_check __copy_from_user_ll_nocache_nozero
		(void *to, const void __user *from, unsigned long n);

static __always_inline unsigned long __must_check
raw_copy_to_user(void __user *to, const void *from, unsigned long n)
{
	return __copy_user_ll((__force void *)to, from, n);
}

static __always_inline unsigned long
raw_copy_from_user(void *to, const void __user *from, unsigned long n)
{
	return __copy_user_ll(to, (__force const void *)from, n);
}

unsigned long __must_check copy_from_user_inatomic_nontemporal(void *, const void __user *, unsigned long n);
unsigned long __must_check clear_user(void __user *mem, unsigned long len);
unsigned long __must_check __clear_user(void __user *mem, unsigned long len);
"#,
        },
    }
}

pub fn i386_makefile(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/x86/lib/Makefile",
            line: 56,
            text: r#"
ifeq ($(CONFIG_X86_32),y)
        obj-y += atomic64_32.o
        lib-y += atomic64_cx8_32.o
        lib-y += checksum_32.o
        lib-y += strstr_32.o
        lib-y += string_32.o
ifneq ($(CONFIG_X86_CMPXCHG64),y)
        lib-y += cmpxchg8b_emu.o atomic64_386_32.o
endif
else
        obj-y += iomap_copy_64.o
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/x86/lib/Makefile",
            line: 43,
            text: r#"
ifeq ($(CONFIG_X86_32),y)
        obj-y += atomic64_32.o
        lib-y += atomic64_cx8_32.o
        lib-y += checksum_32.o
        lib-y += strstr_32.o
        lib-y += string_32.o
        lib-y += memmove_32.o
        lib-y += cmpxchg8b_emu.o
ifneq ($(CONFIG_X86_CMPXCHG64),y)
        lib-y += atomic64_386_32.o
endif
"#,
        },
    }
}

pub fn objtool(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "tools/objtool/check.c",
            line: 1102,
            text: r#"	"__ubsan_handle_type_mismatch_v1",
	"__ubsan_handle_shift_out_of_bounds",
	/* misc */
	"csum_partial_copy_generic",
	"copy_mc_fragile",
	"copy_mc_fragile_handle_tail",
	"copy_mc_enhanced_fast_string",
	"ftrace_likely_update", /* CONFIG_TRACE_BRANCH_PROFILING */
	"clear_user_erms",
	"clear_user_rep_good",
	"clear_user_original",
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "tools/objtool/check.c",
            line: 1256,
            text: r#"	"__stack_chk_fail",
	/* misc */
	"csum_partial_copy_generic",
	"copy_mc_fragile",
	"copy_mc_fragile_handle_tail",
	"copy_mc_enhanced_fast_string",
	"rep_stos_alternative",
	"rep_movs_alternative",
	"copy_to_nontemporal",
	NULL
};

static void add_uaccess_safe(struct objtool_file *file)
"#,
        },
    }
}

pub fn armv6_makefile(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/arm/lib/Makefile",
            line: 14,
            text: r#"		   ashldi3.o ashrdi3.o lshrdi3.o muldi3.o             \
		   ucmpdi2.o lib1funcs.o div64.o                      \
		   io-readsb.o io-writesb.o io-readsl.o io-writesl.o  \
		   call_with_stack.o bswapsdi2.o

mmu-y		:= clear_user.o copy_page.o getuser.o putuser.o       \
		   copy_from_user.o copy_to_user.o

ifdef CONFIG_CC_IS_CLANG
  lib-y	+= backtrace-clang.o
else
  lib-y	+= backtrace.o
"#,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/arm/lib/Makefile",
            line: 14,
            text: r#"		   ashldi3.o ashrdi3.o lshrdi3.o muldi3.o             \
		   ucmpdi2.o lib1funcs.o div64.o                      \
		   io-readsb.o io-writesb.o io-readsl.o io-writesl.o  \
		   call_with_stack.o bswapsdi2.o

mmu-y		:= clear_user.o copy_page.o getuser.o putuser.o       \
		   copy_from_user.o copy_to_user.o

ifdef CONFIG_CC_IS_CLANG
  lib-y	+= backtrace-clang.o
else
  lib-y	+= backtrace.o
"#,
        },
    }
}

/// The same lines in 6.1 and 6.12.
pub fn aarch64_makefile(_v: KernelVersion) -> Excerpt {
    Excerpt {
        path: "arch/arm64/lib/Makefile",
        line: 1,
        text: r#"# SPDX-License-Identifier: GPL-2.0

# KCSAN uses udelay for introducing watchpoint delay; avoid recursion.
KCSAN_SANITIZE_delay.o := n

lib-y		:= clear_user.o delay.o copy_from_user.o		\
		   copy_to_user.o copy_page.o				\
		   clear_page.o csum.o insn.o memchr.o memcpy.o		\
		   memset.o memcmp.o strcmp.o strncmp.o strlen.o	\
		   strnlen.o strchr.o strrchr.o tishift.o

ifeq ($(CONFIG_KERNEL_MODE_NEON), y)
"#,
    }
}

/// 6.12's KUnit usercopy suite's Kconfig entry (the KUnit suite of the
/// generated routines goes after it).
pub fn lib_kconfig_debug_6_12() -> Excerpt {
    Excerpt {
        path: "lib/Kconfig.debug",
        line: 2814,
        text: r#"config USERCOPY_KUNIT_TEST
	tristate "KUnit Test for user/kernel boundary protections"
	depends on KUNIT
	default KUNIT_ALL_TESTS
	help
	  This builds the "usercopy_kunit" module that runs sanity checks
	  on the copy_to/from_user infrastructure, making sure basic
	  user/kernel boundary testing is working.

config TEST_UDELAY
	tristate "udelay test driver"
	help
"#,
    }
}

/// 6.12's `lib/Makefile` lines of the KUnit usercopy suite.
pub fn lib_makefile_6_12() -> Excerpt {
    Excerpt {
        path: "lib/Makefile",
        line: 389,
        text: r#"obj-$(CONFIG_FORTIFY_KUNIT_TEST) += fortify_kunit.o
obj-$(CONFIG_SIPHASH_KUNIT_TEST) += siphash_kunit.o
obj-$(CONFIG_USERCOPY_KUNIT_TEST) += usercopy_kunit.o
obj-$(CONFIG_LONGEST_SYM_KUNIT_TEST) += longest_symbol_kunit.o
CFLAGS_longest_symbol_kunit.o += $(call cc-disable-warning, missing-prototypes)

"#,
    }
}
