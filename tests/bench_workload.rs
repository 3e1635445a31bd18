//! `copygen bench --workload` and `--pointers`: traces parse (and bad ones
//! are located errors), a replay runs the recorded calls in the recorded
//! order at the recorded page offsets, the size x distance table counts
//! them, and each pointer model follows its rule.

use std::process::Command;
use std::sync::Mutex;

use copygen::front::strategy::Direction;
use copygen::tools::bench::distribution::{sequence_with, Distribution, Pointers, MMAP_THRESHOLD};
use copygen::tools::bench::placement::{place, region_pages, segment};
use copygen::tools::bench::{self, Replay, Rng, Subject};
use copygen::tools::trace::{cell, cell_counts, Call, Trace, TraceCall};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/workloads/small.csv"
);

fn err(text: &str) -> String {
    format!("{:#}", Trace::parse("t", "t.csv", text).unwrap_err())
}

#[test]
fn trace_errors_name_file_line_column_and_field() {
    let h = "direction,size,dst_offset,src_offset\n";
    let cases = [
        (
            format!("{h}from,8,0,0\nsideways,8,0,0\n"),
            "t.csv:3:1:",
            "`direction`",
        ),
        (format!("{h}to,-5,0,0\n"), "t.csv:2:4:", "`size`"),
        (format!("{h}to,268435457,0,0\n"), "t.csv:2:4:", "`size`"),
        (
            format!("{h}to,99999999999999999999999,0,0\n"),
            "t.csv:2:4:",
            "`size`",
        ),
        (format!("{h}to,8,4096,0\n"), "t.csv:2:6:", "`dst_offset`"),
        (format!("{h}to,8,0,4096\n"), "t.csv:2:8:", "`src_offset`"),
        (
            format!("{h}to,8,0\n"),
            "t.csv:2:7:",
            "`src_offset` is missing",
        ),
        (format!("{h}to,8x,0,0\n"), "t.csv:2:4:", "`size`"),
        (format!("{h}to,8,0,0,extra\n"), "t.csv:2:10:", "5 fields"),
        (
            "# c\nsize,direction,dst_offset,src_offset\nto,1,0,0\n".into(),
            "t.csv:2:1:",
            "header",
        ),
        ("to,1,0,0\n".into(), "t.csv:1:1:", "header"),
        ("# only a comment\n".into(), "t.csv:", "no header"),
        (h.to_string(), "t.csv:", "no calls"),
    ];
    for (text, at, what) in cases {
        let e = err(&text);
        assert!(e.starts_with(at) && e.contains(what), "{text:?}: {e}");
    }
    // Input text is escaped in messages.
    let e = err(&format!("{h}\u{1b}[2J,8,0,0\n"));
    assert!(!e.contains('\u{1b}') && e.contains("\\u{1b}"), "{e}");
    // The bounds themselves are accepted; the caller column is optional.
    let t = Trace::parse(
        "t",
        "t.csv",
        "direction,size,dst_offset,src_offset,caller\nto,268435456,4095,0,vfs_read\nfrom, 0 ,0,4095,\n",
    )
    .unwrap();
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.calls[0].dir, Direction::ToUser);
    assert_eq!(
        t.calls[0].call,
        Call {
            n: 268435456,
            src_off: 0,
            dst_off: 4095
        }
    );
    assert_eq!(t.callers, vec!["vfs_read".to_string()]);
    assert_eq!((t.calls[0].caller, t.calls[1].caller), (Some(0), None));
}

#[test]
fn the_example_trace_loads() {
    let t = Trace::load(FIXTURE.as_ref()).unwrap();
    assert_eq!(t.calls.len(), 4096);
    assert!(t.calls.iter().any(|c| c.dir == Direction::FromUser));
    assert!(t.callers.contains(&"filemap_read".to_string()));
}

fn call(n: u32, src_off: u16, dst_off: u16) -> Call {
    Call {
        n,
        src_off,
        dst_off,
    }
}

#[test]
fn placement_puts_every_call_at_its_recorded_offsets_within_the_working_set() {
    let t = Trace::load(FIXTURE.as_ref()).unwrap();
    for ws in [8192, 256 << 10, 4 << 20] {
        let pages = region_pages(&t.calls, ws);
        let seg = segment(&t.calls, 1234, 4096);
        let placed = place(&seg, pages);
        assert_eq!(placed.len(), seg.len());
        let mut top = 0;
        for (c, p) in seg.iter().zip(&placed) {
            assert_eq!(p.dst % 4096, c.dst_off as usize, "{c:?} {p:?}");
            assert_eq!(p.src % 4096, c.src_off as usize, "{c:?} {p:?}");
            assert_eq!(p.n, c.n as usize);
            assert!(p.dst + p.n <= pages * 4096 && p.src + p.n <= pages * 4096);
            top = top.max(p.dst + p.n);
        }
        // The calls rotate over the whole working set (when it is larger
        // than one call), not one page.
        if pages > 20 {
            assert!(
                top > (pages - 20) * 4096,
                "{ws}: reached {top} of {}",
                pages * 4096
            );
        }
    }
    // Consecutive calls take fresh pages: no two neighbours share a page.
    let p = place(&[call(100, 5, 7), call(5000, 4000, 0), call(1, 0, 0)], 64);
    assert_eq!((p[0].dst, p[0].src), (7, 5));
    assert_eq!((p[1].dst, p[1].src), (4096, 4096 + 4000));
    assert_eq!((p[2].dst, p[2].src), (3 * 4096, 4 * 4096));
    // At the end of the region the next call starts again at the first page.
    let p = place(&[call(10, 0, 0), call(10, 3, 3), call(10, 9, 9)], 2);
    assert_eq!(p[2].dst, 9);
}

#[test]
fn segments_keep_the_recorded_order() {
    let t = Trace::load(FIXTURE.as_ref()).unwrap();
    let seg = segment(&t.calls, 4000, 300);
    for (i, c) in seg.iter().enumerate() {
        assert_eq!(*c, t.calls[(4000 + i) % 4096].call);
    }
}

#[test]
fn the_table_counts_calls_by_size_class_and_distance_band() {
    assert_eq!(cell(&call(15, 0, 0)), (0, 0));
    assert_eq!(cell(&call(16, 0, 15)), (1, 1));
    assert_eq!(cell(&call(63, 100, 116)), (1, 2));
    assert_eq!(cell(&call(64, 100, 131)), (2, 2));
    assert_eq!(cell(&call(255, 0, 32)), (2, 3));
    assert_eq!(cell(&call(256, 0, 63)), (3, 3));
    assert_eq!(cell(&call(1023, 0, 64)), (3, 4));
    assert_eq!(cell(&call(1024, 4090, 5)), (4, 1)); // (5 - 4090) mod 4096 = 11
    assert_eq!(cell(&call(4096, 10, 0)), (4, 4)); // 4086
    assert_eq!(cell(&call(4097, 0, 16)), (5, 2));
    let calls = [
        call(8, 0, 0),
        call(8, 7, 7),
        call(100, 0, 20),
        call(100, 4080, 0),
        call(5000, 0, 16),
    ];
    let counts = cell_counts(&calls);
    assert_eq!(counts[0][0], 2);
    assert_eq!(counts[2][2], 2);
    assert_eq!(counts[5][2], 1);
    assert_eq!(counts.iter().flatten().sum::<u32>(), 5);
}

#[test]
fn pointer_models_follow_their_rules() {
    let mut rng = Rng::new(3);
    let sizes = [0, 1, 64, 4096, MMAP_THRESHOLD - 1, MMAP_THRESHOLD, 1 << 20];
    let mut odd = 0;
    for i in 0..20_000 {
        let n = sizes[i % sizes.len()];
        let (s, d) = (
            Pointers::Uniform.src(n, &mut rng),
            Pointers::Uniform.dst(n, &mut rng),
        );
        assert!(s < 4096 && d < 4096);
        odd += (s % 16 != 0) as u32;
        for side in [
            Pointers::Malloc.src(n, &mut rng),
            Pointers::Malloc.dst(n, &mut rng),
        ] {
            if n >= MMAP_THRESHOLD {
                assert_eq!(side, 16, "an mmap'd block's user pointer is at +16");
            } else {
                assert!(side % 16 == 0 && side < 4096, "{side}");
            }
        }
        let (s, d) = (
            Pointers::PageCache.src(n, &mut rng),
            Pointers::PageCache.dst(n, &mut rng),
        );
        assert_eq!(s, 0);
        if n >= MMAP_THRESHOLD {
            assert_eq!(call(n as u32, s, d).alias(), 16);
        } else {
            assert_eq!(d % 16, 0);
        }
    }
    assert!(odd > 15_000, "uniform offsets are not 16-aligned: {odd}");
    // Heap blocks spread over the page (all 256 slots reached).
    let mut seen = [false; 256];
    for _ in 0..20_000 {
        seen[Pointers::Malloc.dst(64, &mut rng) as usize / 16] = true;
    }
    assert!(seen.iter().all(|&s| s));
    // And through a distribution's sequences.
    let d = Distribution::load("MemcpyGoogleA").unwrap();
    let seq = sequence_with(&d, 10_000, 0.0, Pointers::PageCache, &mut rng);
    assert!(seq.iter().all(|c| c.src_off == 0 && c.dst_off % 16 == 0));
    let seq = sequence_with(&d, 10_000, 0.0, Pointers::Malloc, &mut rng);
    assert!(seq
        .iter()
        .all(|c| c.src_off % 16 == 0 && c.dst_off % 16 == 0));
    assert!(seq.iter().any(|c| c.src_off != c.dst_off));
}

static LOG: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "sysv64" fn record(to: *mut u8, from: *const u8, n: usize) -> usize {
    LOG.lock().unwrap().push((to as usize, from as usize, n));
    0
}

#[test]
fn a_replay_runs_each_segment_in_order_at_the_recorded_offsets() {
    let t = Trace::load(FIXTURE.as_ref()).unwrap();
    let trace: Vec<TraceCall> = t.calls.clone();
    let calls = 500;
    let replay = Replay::new(t, calls, 256 << 10);
    let subjects = [Subject {
        name: "rec".into(),
        f: record,
        _owner: None,
    }];
    let opts = bench::BenchOptions {
        repeats: 2,
        ..bench::BenchOptions::default()
    };
    let res = bench::run_replay(&replay, &subjects, &opts, &|_, _| {});
    assert_eq!(res.figures.len(), 1);
    let log = LOG.lock().unwrap().clone();
    // Per round: a warm-up segment, the timed one, the timed one again
    // (each call timed alone).
    let warm = calls / 4 + 1;
    assert_eq!(log.len(), 2 * (warm + 2 * calls));
    let find = |part: &[(usize, usize, usize)]| {
        // The part is a run of consecutive trace calls, at their offsets.
        let fits = |start: usize| {
            part.iter().enumerate().all(|(i, &(d, s, n))| {
                let c = trace[(start + i) % trace.len()].call;
                d % 4096 == c.dst_off as usize
                    && s % 4096 == c.src_off as usize
                    && n == c.n as usize
            })
        };
        (0..trace.len()).find(|&s| fits(s))
    };
    let mut starts = Vec::new();
    for round in log.chunks(warm + 2 * calls) {
        let (w, timed, each) = (
            &round[..warm],
            &round[warm..warm + calls],
            &round[warm + calls..],
        );
        assert!(find(w).is_some(), "the warm-up is a recorded run");
        let s = find(timed).expect("the timed segment is a recorded run");
        assert_eq!(timed, each, "the per-call pass replays the same calls");
        starts.push(s);
    }
    assert_ne!(starts[0], starts[1], "each round starts somewhere new");
    // The table's counts are the trace's.
    let total: u32 = res.counts.iter().flatten().sum();
    assert_eq!(total as usize, trace.len());
}

fn copygen(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_replays_a_workload_and_prints_the_table() {
    let out = copygen(&[
        "bench",
        "rep_movsb",
        "memcpy",
        "--workload",
        FIXTURE,
        "--repeats",
        "3",
    ]);
    let stdout = succeeded(&out);
    assert!(stdout.contains("working set 256 KiB"), "{stdout}");
    assert!(stdout.contains("vs rep_movsb"), "{stdout}");
    assert!(
        stdout.contains("by size class and (dst - src) mod 4096"),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("64-255") && l.contains("16..31"))
        .unwrap_or_else(|| panic!("no 64-255 x 16..31 row: {stdout}"));
    let t = Trace::load(FIXTURE.as_ref()).unwrap();
    let want = cell_counts(t.calls.iter().map(|c| &c.call))[2][2];
    assert_eq!(
        row.split_whitespace().nth(2),
        Some(want.to_string().as_str()),
        "{row}"
    );
}

#[test]
fn cli_refuses_bad_traces_and_options_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "direction,size,dst_offset,src_offset\nto,8,4096,0\n").unwrap();
    let out = copygen(&["bench", "rep_movsb", "--workload", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.csv:2:6:") && stderr.contains("dst_offset"),
        "{stderr}"
    );
    let out = copygen(&[
        "bench",
        "rep_movsb",
        "--workload",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = copygen(&[
        "bench",
        "rep_movsb",
        "--distribution",
        "MemcpyGoogleA",
        "--pointers",
        "stack",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = copygen(&[
        "bench",
        "rep_movsb",
        "--working-set",
        "1024",
        "--workload",
        FIXTURE,
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cli_distribution_runs_state_their_pointer_model() {
    let out = copygen(&[
        "bench",
        "rep_movsb",
        "--distribution",
        "MemcpyGoogleA",
        "--pointers",
        "page-cache",
        "--calls",
        "64",
        "--repeats",
        "1",
    ]);
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("pointers page-cache: src a page-cache page"),
        "{stdout}"
    );
}

/// Standard output of a run that must have succeeded (its standard error
/// in the message when it did not).
fn succeeded(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

unsafe extern "sysv64" fn nothing(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    0
}

/// A trace in phases (the first 300 calls at distance 16, then 690 at 64+,
/// then 10 large ones): a round's segment of 500 calls often misses the
/// first phase, yet the cell gets a cost from the rounds that hold it; a
/// cell no segment holds 32 calls of gets none.
#[test]
fn a_cell_gets_a_cost_from_the_rounds_whose_segment_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phases.csv");
    let mut text = String::from("direction,size,dst_offset,src_offset\n");
    for _ in 0..300 {
        text.push_str("to,100,16,0\n");
    }
    for _ in 0..690 {
        text.push_str("to,100,200,0\n");
    }
    for _ in 0..10 {
        text.push_str("to,2000,0,0\n");
    }
    std::fs::write(&path, text).unwrap();
    let replay = Replay::new(Trace::load(&path).unwrap(), 500, 256 << 10);
    let subjects = [Subject {
        name: "nothing".into(),
        f: nothing,
        _owner: None,
    }];
    let opts = bench::BenchOptions {
        repeats: 15,
        ..bench::BenchOptions::default()
    };
    let res = bench::run_replay(&replay, &subjects, &opts, &|_, _| {});
    let cells = &res.figures[0].cells;
    assert!(cells[2][2].is_some(), "64-255 B at 16..31: {cells:?}");
    assert!(cells[2][4].is_some(), "64-255 B at 64+: {cells:?}");
    assert!(cells[4][0].is_none(), "1K-4K at 0 (10 calls): {cells:?}");
}
