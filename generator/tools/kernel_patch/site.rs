//! The 6.12 x86_64 call site of a per-CPU strategy in the patch:
//! `copy_user_generic()`'s inline `ALTERNATIVE` is replaced by the chain
//! over the strategy's variants (`kernel::variant_chain`), and the patch
//! says what each CPU runs and what the chain costs.

use std::fmt::Write as _;

use super::{edit, excerpts, Edit};
use crate::front::strategy::Strategy;
use crate::kernel::site::{cost_per_site, stock_chain, Chain};
use crate::kernel::variant_chain::{self, is_bare_movsb, per_cpu_table, variant_routine};
use crate::kernel::version::KernelVersion;

/// The glue edit of `copy_user_generic()` for the wired `t`.
pub(super) fn copy_user_generic_edit(t: &Strategy, chain: &Chain) -> Edit {
    let old = format!(
        "\t/*\n\t * If CPU has FSRM feature, use 'rep movs'.\n\t * Otherwise, use rep_movs_alternative.\n\t */\n\tasm volatile(\n\t\t\"1:\\n\\t\"\n\t\t{}\n",
        stock_chain(KernelVersion::V6_12).c_text(2)
    );
    let mut comment = format!(
        "\t/*\n\t * copygen: one ALTERNATIVE per feature test of the per-CPU variants of\n\t * {} (arch/x86/lib/copygen_user_64.S), patched at boot. A CPU\n\t * whose variant is a bare 'rep movsb' keeps it inline; the others call\n\t * their variant's routine, in rep_movs_alternative's convention, or the\n\t * entry point that picks the variant itself:\n",
        t.name
    );
    for v in &t.variants {
        let _ = writeln!(
            comment,
            "\t *   {}: {}",
            v.when
                .as_ref()
                .map_or("default".into(), |c| c.kernel_text()),
            if is_bare_movsb(v) {
                "rep movsb".to_string()
            } else {
                variant_routine(t, v)
            }
        );
    }
    comment.push_str("\t */\n");
    let new = format!(
        "{comment}\tasm volatile(\n\t\t\"1:\\n\\t\"\n\t\t{}\n",
        chain.c_text(2)
    );
    edit(excerpts::x86_64_copy_user_generic_6_12(), &[(&old, new)])
}

/// The patch body's paragraph on the call site.
pub fn note(t: &Strategy, kernel: KernelVersion, sites: Option<usize>) -> String {
    let chain = variant_chain::chain(t, kernel);
    let stock = stock_chain(kernel);
    let mut n = String::from(
        "Call site: 6.12's copy_user_generic() is inline, and its\n\
         \x20 ALTERNATIVE(\"rep movsb\", \"call rep_movs_alternative\",\n\
         \x20             ALT_NOT(X86_FEATURE_FSRM))\n\
         becomes one ALTERNATIVE per feature test of the variants, from the\n\
         lowest priority to the highest (a later one overrides an earlier):\n",
    );
    let _ = writeln!(n, "  {}", chain.old.gas());
    for a in &chain.alts {
        let _ = writeln!(n, "  {} if {}", a.insn.gas(), a.flags());
    }
    if let Some(why) = &chain.fallback {
        let _ = writeln!(n, "({why}.)");
    }
    n.push_str(
        "A CPU whose variant is a bare rep movsb keeps the stock inline rep movsb\n\
         byte for byte; the others call their variant's routine in\n\
         rep_movs_alternative's convention (only rax clobbered, STAC done by\n\
         the site), or the entry point, which picks the variant itself. After\n\
         alternatives, per CPU feature set (the features the variants name;\n\
         the variant the entry point picks; the site):\n",
    );
    for l in per_cpu_table(t, kernel) {
        let _ = writeln!(n, "  {l}");
    }
    let (text, alt, repl) = cost_per_site(&chain, &stock);
    let _ = write!(
        n,
        "Cost per site against the stock one: {text} bytes of .text (every\n\
         alternative is padded to {} bytes, the stock site's {}), {alt} bytes of\n\
         .altinstructions, {repl} bytes of .altinstr_replacement",
        chain.len(),
        stock.len()
    );
    match sites {
        Some(s) => {
            let _ = writeln!(
                n,
                ";\nover the {s} inlined sites counted in the tree: {} bytes of .text,\n\
                 {} of .altinstructions, {} of .altinstr_replacement.",
                text * s as isize,
                alt * s as isize,
                repl * s as isize
            );
        }
        None => n.push_str(".\n"),
    }
    n
}
