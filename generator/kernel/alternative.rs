//! The kernel's x86 `ALTERNATIVE` as C code writes it (6.12's
//! `arch/x86/include/asm/alternative.h`): the macros an inline-asm string
//! expands, and the patch table (`.altinstructions`, one `struct alt_instr`
//! per alternative) they leave in the object. A site's C text
//! ([`super::site::Chain::c_text`]) compiled with [`c_header`] is the
//! object the kernel builds for that site.

use super::site::Chain;
use crate::front::variant::CpuFeature;

/// Bytes of one `struct alt_instr` in `.altinstructions` (6.12: two s32
/// offsets, a u32 of feature and flags, two u8 lengths).
pub const ALT_INSTR_BYTES: usize = 14;

/// 6.12's C-side macros (arch/x86/include/asm/alternative.h) as gcc sees
/// them in the kernel, up to `ALTERNATIVE_3` (a longer chain nests
/// `ALTERNATIVE` around it, [`super::site::Chain::c_text`]); the
/// `X86_FEATURE_*` bits come from [`c_header`].
const C_MACROS: &str = r##"#define __stringify_1(x...) #x
#define __stringify(x...) __stringify_1(x)
#define ALT_FLAGS_SHIFT 16
#define ALT_FLAG_NOT (1 << 0)
#define ALT_NOT(feature) ((ALT_FLAG_NOT << ALT_FLAGS_SHIFT) | (feature))
#define alt_slen "772b-771b"
#define alt_total_slen "773b-771b"
#define alt_rlen "775f-774f"
#define OLDINSTR(oldinstr) "# ALT: oldinstr\n" "771:\n\t" oldinstr "\n772:\n" "# ALT: padding\n" \
	".skip -(((" alt_rlen ")-(" alt_slen ")) > 0) * " "((" alt_rlen ")-(" alt_slen ")),0x90\n" "773:\n"
#define ALTINSTR_ENTRY(ft_flags) ".pushsection .altinstructions,\"a\"\n" " .long 771b - .\n" \
	" .long 774f - .\n" " .4byte " __stringify(ft_flags) "\n" " .byte " alt_total_slen "\n" \
	" .byte " alt_rlen "\n" ".popsection\n"
#define ALTINSTR_REPLACEMENT(newinstr) ".pushsection .altinstr_replacement, \"ax\"\n" \
	"# ALT: replacement\n" "774:\n\t" newinstr "\n775:\n" ".popsection\n"
#define ALTERNATIVE(oldinstr, newinstr, ft_flags) OLDINSTR(oldinstr) ALTINSTR_ENTRY(ft_flags) \
	ALTINSTR_REPLACEMENT(newinstr)
#define ALTERNATIVE_2(oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2) \
	ALTERNATIVE(ALTERNATIVE(oldinstr, newinstr1, ft_flags1), newinstr2, ft_flags2)
#define ALTERNATIVE_3(oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2, newinstr3, ft_flags3) \
	ALTERNATIVE(ALTERNATIVE_2(oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2), newinstr3, ft_flags3)
"##;

/// The kernel's `ALTERNATIVE` macros and the `X86_FEATURE_*` bits of
/// every feature a variant may name, for a C file.
pub fn c_header() -> String {
    let mut h = String::from(C_MACROS);
    for f in CpuFeature::ALL {
        let bit = f.info().kernel_bit;
        h.push_str(&format!(
            "#define {} ({} * 32 + {})\n",
            f.kernel_macro(),
            bit / 32,
            bit % 32
        ));
    }
    h
}

/// The name of the function [`site_c_source`] defines.
pub const SITE_FUNCTION: &str = "site";

/// A C file whose function [`SITE_FUNCTION`] is the site `chain` as the
/// kernel writes it (`asm volatile("1:\n\t" <chain> "2:\n")`), then its
/// return.
pub fn site_c_source(chain: &Chain) -> String {
    format!(
        "{}\nvoid {SITE_FUNCTION}(void)\n{{\n\tasm volatile(\"1:\\n\\t\"\n\t\t{}\n\t\t\"2:\\n\" ::: \"memory\");\n}}\n",
        c_header(),
        chain.c_text(2)
    )
}
