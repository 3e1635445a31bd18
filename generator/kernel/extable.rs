//! The type word of the kernel's 12-byte exception-table entries (`struct
//! exception_table_entry`: insn, fixup, then the type), decoded as each
//! arch's headers define it.
//!
//! x86 (`arch/x86/include/asm/extable_fixup_types.h`, 6.1 and 6.12): one
//! `int data`, the type in the low byte (`EX_DATA_TYPE_MASK`), a register
//! in bits 8-11 (`EX_DATA_REG`), flags in bits 12-15 (`EX_DATA_FLAG`) and a
//! signed immediate in the top half (`EX_DATA_IMM`). arm64 and riscv
//! (`asm/asm-extable.h`): a `short type` then a `short data`.

use crate::front::strategy::Arch;

/// `EX_DATA_TYPE_MASK`.
const X86_TYPE_MASK: u32 = 0xff;
/// `EX_DATA_REG_SHIFT`; `EX_DATA_REG_MASK` is four bits.
const X86_REG_SHIFT: u32 = 8;
/// `EX_DATA_FLAG_SHIFT`; `EX_DATA_FLAG_MASK` is four bits.
const X86_FLAG_SHIFT: u32 = 12;
/// `EX_DATA_IMM_SHIFT`: the immediate is the signed top half.
const X86_IMM_SHIFT: u32 = 16;

/// x86's `EX_TYPE_DEFAULT`: resume at the fixup.
pub const X86_EX_TYPE_DEFAULT: u32 = 1;
/// x86's `EX_TYPE_UACCESS`: resume at the fixup (a user access).
pub const X86_EX_TYPE_UACCESS: u32 = 3;
/// x86's `EX_TYPE_COPY` (6.1): `ax` = the trap number, then the fixup.
pub const X86_EX_TYPE_COPY: u32 = 4;

/// x86's `EX_TYPE_UCOPY_LEN` (i386's `__copy_user`): `cx = imm * cx + reg`,
/// then the fixup.
pub const X86_EX_TYPE_UCOPY_LEN: u32 = 19;

/// What an x86 entry's handler does to the registers before it resumes at
/// the fixup (`arch/x86/mm/extable.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X86Handler {
    /// Nothing (`EX_TYPE_DEFAULT`, `EX_TYPE_UACCESS`, ...).
    Resume,
    /// `ax` = the trap number (6.1's `EX_TYPE_COPY`).
    TrapInAx,
    /// `cx = imm * cx + reg` (`EX_TYPE_UCOPY_LEN`; `reg` as x86 numbers them).
    UcopyLen { imm: i64, reg: usize },
}

/// The handler of an x86 entry with type word `word`.
pub fn x86_handler(word: u32) -> X86Handler {
    match word & X86_TYPE_MASK {
        X86_EX_TYPE_COPY => X86Handler::TrapInAx,
        X86_EX_TYPE_UCOPY_LEN => X86Handler::UcopyLen {
            imm: i64::from((word as i32) >> X86_IMM_SHIFT),
            reg: ((word >> X86_REG_SHIFT) & 0xf) as usize,
        },
        _ => X86Handler::Resume,
    }
}

/// The type of an x86 entry's type word (its data fields dropped).
pub fn x86_type(word: u32) -> u32 {
    word & X86_TYPE_MASK
}

/// x86's `EX_TYPE_*` by number. 4, `EX_TYPE_COPY`, is 6.1's (6.4 removed
/// it: [`crate::kernel::version::EX_TYPE_COPY_REMOVED`]); 21,
/// `EX_TYPE_ERETU`, came with FRED (6.9).
const X86_TYPES: [&str; 22] = [
    "EX_TYPE_NONE",
    "EX_TYPE_DEFAULT",
    "EX_TYPE_FAULT",
    "EX_TYPE_UACCESS",
    "EX_TYPE_COPY",
    "EX_TYPE_CLEAR_FS",
    "EX_TYPE_FPU_RESTORE",
    "EX_TYPE_BPF",
    "EX_TYPE_WRMSR",
    "EX_TYPE_RDMSR",
    "EX_TYPE_WRMSR_SAFE",
    "EX_TYPE_RDMSR_SAFE",
    "EX_TYPE_WRMSR_IN_MCE",
    "EX_TYPE_RDMSR_IN_MCE",
    "EX_TYPE_DEFAULT_MCE_SAFE",
    "EX_TYPE_FAULT_MCE_SAFE",
    "EX_TYPE_POP_REG",
    "EX_TYPE_IMM_REG",
    "EX_TYPE_FAULT_SGX",
    "EX_TYPE_UCOPY_LEN",
    "EX_TYPE_ZEROPAD",
    "EX_TYPE_ERETU",
];

/// x86's `EX_FLAG_*` (the flag field's values; 0 is none).
const X86_FLAGS: [&str; 4] = [
    "",
    "EX_FLAG_CLEAR_AX",
    "EX_FLAG_CLEAR_DX",
    "EX_FLAG_CLEAR_AX_DX",
];

/// The arm64 types whose number 6.1 and 6.12 agree on (the others moved:
/// 6.12 put `EX_TYPE_KACCESS_ERR_ZERO` at 3).
const ARM64_TYPES: [&str; 3] = ["EX_TYPE_NONE", "EX_TYPE_BPF", "EX_TYPE_UACCESS_ERR_ZERO"];

/// The riscv types whose number 6.1 and 6.12 agree on.
const RISCV_TYPES: [&str; 4] = [
    "EX_TYPE_NONE",
    "EX_TYPE_FIXUP",
    "EX_TYPE_BPF",
    "EX_TYPE_UACCESS_ERR_ZERO",
];

/// An entry's type word, decoded: the type's name (`EX_TYPE_UACCESS`, or
/// `type 23` for a number the headers do not name) and its data (`None`
/// when every data field is 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryType {
    pub name: String,
    pub data: Option<String>,
}

/// Decode the type word `word` of an `arch` entry.
pub fn entry_type(arch: Arch, word: u32) -> EntryType {
    let named = |names: &[&str], n: u32| {
        names
            .get(n as usize)
            .map_or_else(|| n.to_string(), |s| s.to_string())
    };
    let type_name = |names: &[&str], n: u32| match names.get(n as usize) {
        Some(s) => s.to_string(),
        None => format!("type {n}"),
    };
    match arch {
        Arch::X86_64 | Arch::I386 => {
            let reg = (word >> X86_REG_SHIFT) & 0xf;
            let flag = (word >> X86_FLAG_SHIFT) & 0xf;
            let imm = (word as i32) >> X86_IMM_SHIFT;
            let mut data = Vec::new();
            if reg != 0 {
                data.push(format!("reg={reg}"));
            }
            if flag != 0 {
                data.push(format!("flag={}", named(&X86_FLAGS, flag)));
            }
            if imm != 0 {
                data.push(format!("imm={imm}"));
            }
            EntryType {
                name: type_name(&X86_TYPES, word & X86_TYPE_MASK),
                data: (!data.is_empty()).then(|| data.join(" ")),
            }
        }
        Arch::Aarch64 | Arch::Riscv64 | Arch::Armv6 => {
            let names: &[&str] = match arch {
                Arch::Aarch64 => &ARM64_TYPES,
                Arch::Riscv64 => &RISCV_TYPES,
                _ => &[],
            };
            let data = word >> 16;
            EntryType {
                name: type_name(names, word & 0xffff),
                data: (data != 0).then(|| format!("data={data:#x}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_words_decode_as_extable_fixup_types_h_builds_them() {
        // _ASM_EXTABLE_UA and 6.1's _ASM_EXTABLE_CPY: the type alone.
        assert_eq!(
            entry_type(Arch::X86_64, 3),
            EntryType {
                name: "EX_TYPE_UACCESS".into(),
                data: None
            }
        );
        assert_eq!(entry_type(Arch::X86_64, 4).name, "EX_TYPE_COPY");
        // EX_TYPE_EFAULT_REG on reg 2 with EX_FLAG_CLEAR_AX:
        // 17 | EX_DATA_REG(2) | EX_DATA_FLAG(1) | EX_DATA_IMM(-14).
        let w = 17 | (2 << 8) | (1 << 12) | ((-14i32 as u32) << 16);
        assert_eq!(
            entry_type(Arch::X86_64, w),
            EntryType {
                name: "EX_TYPE_IMM_REG".into(),
                data: Some("reg=2 flag=EX_FLAG_CLEAR_AX imm=-14".into())
            }
        );
        assert_eq!(entry_type(Arch::I386, 0x5_00ff).name, "type 255");
        assert_eq!(
            entry_type(Arch::X86_64, 9 << 12).data.as_deref(),
            Some("flag=9")
        );
    }

    #[test]
    fn arm64_and_riscv_words_are_a_short_type_and_a_short_data() {
        // The arm64 shim's _asm_extable_uaccess: data names wzr twice.
        let w = 2 | ((31 | (31 << 5)) << 16);
        assert_eq!(
            entry_type(Arch::Aarch64, w),
            EntryType {
                name: "EX_TYPE_UACCESS_ERR_ZERO".into(),
                data: Some("data=0x3ff".into())
            }
        );
        assert_eq!(entry_type(Arch::Riscv64, 1).name, "EX_TYPE_FIXUP");
        assert_eq!(entry_type(Arch::Aarch64, 3).name, "type 3");
    }
}
