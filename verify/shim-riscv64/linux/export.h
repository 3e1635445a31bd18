/* Shim of <linux/export.h> as 6.5+ use it from assembly: the same
 * EXPORT_SYMBOL as the <asm-generic/export.h> shim. */
#include <asm-generic/export.h>
