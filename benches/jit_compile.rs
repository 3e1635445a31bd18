//! Time to JIT-compile one strategy: lower + select + encode (with branch
//! relaxation) + finalize + register, parse excluded. Target: < 100 µs
//! median per catalog preset.

use copygen::front::catalog::catalog;
use copygen::front::strategy::Arch;
use copygen::jit;
use criterion::{criterion_group, criterion_main, Criterion};

fn jit_compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("jit_compile");
    for s in catalog()
        .expect("catalog")
        .into_iter()
        .filter(|s| s.arch == Arch::X86_64)
    {
        g.bench_function(s.name.clone(), |b| {
            b.iter_with_large_drop(|| jit::compile(std::hint::black_box(&s)).expect("compiles"))
        });
    }
    g.finish();
}

criterion_group!(benches, jit_compile);
criterion_main!(benches);
