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
