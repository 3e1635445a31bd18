/* Shim of <linux/export.h> as 6.5+ use it from assembly: the same
 * EXPORT_SYMBOL as the <asm/export.h> shim. */
#include <asm/export.h>
