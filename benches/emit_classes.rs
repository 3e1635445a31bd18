//! Emit time against the number of size classes: parse excluded, both
//! flavours lowered, selected and rendered. It must grow linearly (10,000
//! classes in about a second); label naming and register saving were once
//! quadratic in it.

use std::path::Path;
use std::time::Duration;

use copygen::front::parse;
use copygen::output::tree::render_tree;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// An x86_64 strategy of `n` 16-byte size classes alternating two methods.
fn many_classes(n: u64) -> String {
    let mut t = String::from(
        "name = \"many\"\ndescription = \"many classes\"\narch = \"x86_64\"\n\n\
         [methods.bytes]\nkind = \"bytes\"\n\n\
         [methods.loop]\nkind = \"unrolled\"\nwidth = 8\nblock = 64\n",
    );
    for i in 0..n {
        let lo = i * 16;
        let sizes = if i + 1 == n {
            format!("{lo}..")
        } else {
            format!("{lo}..={}", lo + 15)
        };
        let method = if i % 2 == 1 { "loop" } else { "bytes" };
        t.push_str(&format!(
            "\n[[dispatch]]\nsizes = \"{sizes}\"\nuse = \"{method}\"\n"
        ));
    }
    t
}

fn emit_classes(c: &mut Criterion) {
    let mut g = c.benchmark_group("emit_classes");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for n in [1_000u64, 4_000, 10_000] {
        let s = parse::parse(Path::new("many.toml"), &many_classes(n), None)
            .expect("the generated strategy validates");
        g.throughput(Throughput::Elements(n));
        g.bench_with_input(BenchmarkId::from_parameter(n), &s, |b, s| {
            b.iter_with_large_drop(|| render_tree(std::slice::from_ref(std::hint::black_box(s))))
        });
    }
    g.finish();
}

criterion_group!(benches, emit_classes);
criterion_main!(benches);
