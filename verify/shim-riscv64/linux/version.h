/* Shim of the kernel's generated <linux/version.h>: the shims model 6.1, so
 * a file that picks its export header by version takes <asm-generic/export.h>. */
#define LINUX_VERSION_CODE 393472
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))
