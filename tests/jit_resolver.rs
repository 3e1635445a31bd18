//! The per-CPU entry code is built from the backend's x86 instruction
//! type, so the JIT encodes the very resolver the emitted files print.

use copygen::arch::cpu::{host_features, Cpuid};
use copygen::backend::x86::{entry, print_inst, Inst};
use copygen::front::strategy::{Arch, Flavor};

#[test]
fn the_jit_compiled_resolver_finds_what_cpuid_says() {
    let jit = copygen::jit::resolver_features().expect("the JIT encodes the resolver");
    assert_eq!(jit, host_features());
    // And both agree with the decoder's own reading of the words.
    assert_eq!(jit, Cpuid::host().unwrap().features());
}

#[test]
fn the_resolver_is_printed_from_typed_instructions() {
    let l = |n: &str| format!(".Lt_{n}");
    let insts = entry::detection(Arch::X86_64, &l);
    assert!(insts.iter().filter(|i| matches!(i, Inst::Cpuid)).count() == 3);
    let text: Vec<String> = insts
        .iter()
        .map(|i| print_inst(i, 8, Flavor::Standalone))
        .collect();
    // The vendor test in the spelling emitted/ has.
    assert!(
        text.contains(&"\tcmpl\t$0x68747541, %ebx".to_string()),
        "{text:#?}"
    );
    assert!(text.contains(&"\tjz\t.Lt_not_zen".to_string()));
    assert!(text.contains(&"\ttestl\t$0x200, %ebx".to_string()));
    assert_eq!(text.last().unwrap(), ".Lt_select:");
}

#[test]
fn preprocessor_conditionals_are_typed_printed_and_matched_by_type() {
    use copygen::backend::x86::{Cpp, Line};
    use copygen::jit::encode::{encode, EncodeError, Mode};
    use copygen::kernel::version::{Release, EX_TYPE_COPY_REMOVED};
    let cond = |c: Cpp| Inst::Cond(c);
    assert_eq!(
        print_inst(
            &cond(Cpp::IfKernelBefore(EX_TYPE_COPY_REMOVED)),
            8,
            Flavor::Linux
        ),
        "#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)"
    );
    assert_eq!(print_inst(&cond(Cpp::Endif), 8, Flavor::Linux), "#endif");
    let lines = |before: Release| -> Vec<Line> {
        [
            cond(Cpp::IfKernelBefore(before)),
            Inst::Ret,
            cond(Cpp::Endif),
        ]
        .into_iter()
        .map(|inst| Line {
            inst,
            user: None,
            fixup_start: false,
        })
        .collect()
    };
    // The JIT models 6.1: a block for kernels before 6.4 is kept...
    let (bytes, _, _) = encode(&lines(EX_TYPE_COPY_REMOVED), Mode::X64).unwrap();
    assert_eq!(bytes, [0xc3]);
    // ...one for kernels before 6.1 is not, and it says so.
    assert!(matches!(
        encode(&lines(Release::new(6, 1)), Mode::X64),
        Err(EncodeError::Unsupported(Inst::Cond(_), _))
    ));
}
