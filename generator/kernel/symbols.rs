//! The names of the kernel's copy routines and of the glue copygen's
//! kernel patch adds: one constant per symbol, used wherever a tool, a
//! probe or a site names one.

/// 6.12's (6.4 and later) x86_64 copy routine: what `copy_user_generic()`
/// calls on CPUs without FSRM, in the `rep movs` convention with STAC done.
pub const REP_MOVS_ALTERNATIVE: &str = "rep_movs_alternative";

/// The one routine a copygen-patched kernel's `raw_copy_{from,to}_user`
/// calls (both directions; x86_64, i386, and RISC-V 6.1).
pub const GLUE_SYMBOL: &str = "copygen_copy_user";

/// On 6.1 the glue's call is an `alternative_call_2`, as the tree's own
/// `copy_user_generic()`: [`GLUE_SYMBOL`] on CPUs without REP_GOOD or ERMS,
/// these with REP_GOOD (and no ERMS) and with ERMS.
pub const GLUE_SYMBOL_REP_GOOD: &str = "copygen_copy_user_rep_good";
pub const GLUE_SYMBOL_ERMS: &str = "copygen_copy_user_erms";

/// 6.1's x86_64 copy routines, `alternative_call_2`'s three choices in
/// `copy_user_generic()` (C convention, STAC/CLAC their own): without
/// REP_GOOD or ERMS, with REP_GOOD, with ERMS.
pub const COPY_USER_GENERIC_UNROLLED: &str = "copy_user_generic_unrolled";
pub const COPY_USER_GENERIC_STRING: &str = "copy_user_generic_string";
pub const COPY_USER_ENHANCED_FAST_STRING: &str = "copy_user_enhanced_fast_string";
