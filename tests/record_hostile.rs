//! Trace text as an attacker or a careless user writes it, for
//! `record --from-trace`, `--kallsyms` and `--summary`: characters of
//! several bytes where the parser cuts a line, bytes that are not UTF-8,
//! lost-event counts past 2^64, a symbol that would break the CSV, one
//! line of megabytes, and callers that would drive the terminal.

use std::process::{Command, Output};
use std::time::Duration;

use copygen::tools::record::kallsyms::Kallsyms;
use copygen::tools::record::parse::{event, parse_bytes, parse_text};
use copygen::tools::record::to_csv;
use copygen::tools::trace::Trace;

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const HEAD: &str = "              dd-93      [000] d....    12.345678: ";
const ANY: &str = "copygen_any: (rep_movs_alternative+0x0/0x70)";
const FIELDS: &str =
    "to_off=16 from_off=0 n=4096 to_kernel=0 from_kernel=1 caller=0xffffffff81000150";

fn kallsyms(text: &str) -> Kallsyms {
    Kallsyms::parse("k", text).unwrap().unwrap()
}

/// Spaces of two and three bytes (NEL, the ideographic space) wherever
/// the parser finds a column: no panic, and a column counted in
/// characters.
#[test]
fn multi_byte_spaces_before_sliced_columns() {
    for space in ["\u{85}", "\u{3000}", "\u{2028}", "\u{a0}"] {
        let lines = [
            format!("{HEAD}copygen_any{space}: (rep_movs_alternative+0x0/0x70) {FIELDS}"),
            format!("  d{space}d-93 [000] d.... 12.5{space}: {ANY} {FIELDS}"),
            format!("  dd-93 [000] d.... 12.5:{space}{ANY} {FIELDS}"),
            format!("  dd-93 [000] d.... {space}{ANY} {FIELDS}"),
            format!("{HEAD}{ANY} to_off=1{space} from_off=0 n=1 to_kernel=0 from_kernel=1"),
            format!("{HEAD}{ANY} {space}={space} n=1"),
            format!("{space}{HEAD}{space}{ANY}{space}{FIELDS}{space}"),
        ];
        for line in &lines {
            // Either a call or a located error; any column it names is a
            // character of the line (or one past its end).
            match event(line) {
                Ok(_) => {}
                Err((col, msg)) => assert!(
                    (1..=line.chars().count() + 1).contains(&col),
                    "{line:?}: column {col}: {msg}"
                ),
            }
            if let Err(e) = parse_text("t", line, None, None, 10) {
                assert!(e.to_string().starts_with("t:1:"), "{e}");
            }
        }
    }
    // The column of a bad field after wide characters is the character's.
    let line = format!("  東京-1 [000] d.... 1.5: {ANY} to_off=1 from_off=0 n=x");
    let (col, msg) = event(&line).unwrap_err();
    assert_eq!(col, line.chars().count(), "{msg}");
    let line = format!("  dd-93 [000] d.... 12.5\u{3000}: {ANY} {FIELDS}");
    let (col, msg) = event(&line).unwrap_err();
    // The word before the event is `:`, the ideographic space ending the stamp.
    let at = line.find("\u{3000}:").unwrap();
    assert_eq!(col, line[..at].chars().count() + 2, "{msg}");
    let line = format!("{HEAD}cop\u{3000}ygen_any\u{3000}: (x+0/1)");
    let (col, msg) = event(&line).unwrap_err();
    // The name is `ygen_any`; the word before it, `cop`, is no timestamp.
    assert_eq!(
        col,
        line[..line.find("cop").unwrap()].chars().count() + 1,
        "{msg}"
    );
    assert!(msg.contains("`cop` is not a timestamp"), "{msg}");

    // From the command line: exit 2 with a located error, never 101.
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.trace");
    std::fs::write(
        &t,
        format!("{HEAD}{ANY} {FIELDS}\n{HEAD}copygen_any\u{3000}: (x+0/1) n=1\n"),
    )
    .unwrap();
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("t.trace:2:"), "{}", stderr(&o));
}

/// A task name in Latin-1 (the kernel prints `comm` as bytes) is read;
/// a stray byte where the parser reads is a located error naming the
/// line and the column.
#[test]
fn bytes_that_are_not_utf8() {
    let mut text = format!("{HEAD}{ANY} {FIELDS}\n").into_bytes();
    text.extend_from_slice(b"  caf\xe9-12 [001] d.... 13.000001: ");
    text.extend_from_slice(
        format!("{ANY} to_off=1 from_off=0 n=8 to_kernel=1 from_kernel=0\n").as_bytes(),
    );
    let p = parse_bytes("t", &text, None, None, 10).unwrap();
    assert_eq!(p.rows.len(), 2);
    assert_eq!((p.rows[1].n, p.rows[1].dst_off), (8, 1));

    let mut bad = format!("# tracer: nop\n{HEAD}{ANY} to_off=1 from_off=0 n=").into_bytes();
    bad.extend_from_slice(b"\xe98 to_kernel=1 from_kernel=0\n");
    let e = parse_bytes("t", &bad, None, None, 10)
        .unwrap_err()
        .to_string();
    let col = HEAD.len() + ANY.len() + " to_off=1 from_off=0 n=".len() + 1;
    assert!(
        e.starts_with(&format!("t:2:{col}: error: not UTF-8 text: byte 0xe9")),
        "{e}"
    );

    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.trace");
    std::fs::write(&t, &text).unwrap();
    let out = dir.path().join("t.csv");
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&t)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .ends_with("\nto,4096,16,0,\nfrom,8,1,0,\n"));

    std::fs::write(&t, &bad).unwrap();
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("t.trace:2:{col}: error: not UTF-8 text")),
        "{}",
        stderr(&o)
    );

    // A System.map with a stray byte: its line and column.
    let e = Kallsyms::parse_bytes("map", b"ffffffff81000000 T a\nffffffff81000100 t b\xff\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("map:2:21: error: not UTF-8 text: byte 0xff"),
        "{e}"
    );
}

/// `[LOST N EVENTS]` counts add up without wrapping: past 2^64 - 1 they
/// stay there, and a count too large for a u64 is as large as one.
#[test]
fn lost_counts_saturate() {
    let text = format!(
        "CPU:0 [LOST 18446744073709551615 EVENTS]\nCPU:1 [LOST 5 EVENTS]\n{HEAD}{ANY} {FIELDS}\n"
    );
    let p = parse_text("t", &text, None, None, 10).unwrap();
    assert_eq!(p.lost, u64::MAX);
    assert_eq!(p.rows.len(), 1);
    let text = format!("CPU:3 [LOST 99999999999999999999999999 EVENTS]\n{HEAD}{ANY} {FIELDS}\n");
    assert_eq!(
        parse_text("t", &text, None, None, 10).unwrap().lost,
        u64::MAX
    );
    let text = "CPU:3 [LOST 12 EVENTS]\nCPU:0 [LOST 30 EVENTS]\n";
    assert_eq!(parse_text("t", text, None, None, 10).unwrap().lost, 42);
}

/// What copygen writes, copygen reads: a caller whose name would split
/// the CSV (a comma) or be read otherwise (a quote, a leading `#`) is
/// refused where the trace names it; any other name reads back as written.
#[test]
fn callers_read_back_or_are_refused() {
    for bad in ["a,b", "say\"hi\"", "#x"] {
        let k = kallsyms(&format!("ffffffff81000100 t {bad}\n"));
        let text = format!("# tracer: nop\n{HEAD}{ANY} {FIELDS}\n");
        let e = parse_text("t", &text, None, Some(&k), 10)
            .unwrap_err()
            .to_string();
        let col = format!("{HEAD}{ANY} {FIELDS}").find("caller=").unwrap() + 1;
        assert!(
            e.starts_with(&format!(
                "t:2:{col}: error: field `caller`: 0xffffffff81000150 is `"
            )),
            "{bad}: {e}"
        );
    }
    for good in [
        "vfs_read",
        "foo.isra.0",
        "café",
        "a\u{1b}[31mb",
        "_RNvCs1234_4core3fmt5write",
    ] {
        let k = kallsyms(&format!("ffffffff81000100 t {good}\n"));
        let p = parse_text("t", &format!("{HEAD}{ANY} {FIELDS}\n"), None, Some(&k), 10).unwrap();
        let csv = to_csv(&["a note".into()], &p.rows);
        let back = Trace::parse("t", "t.csv", &csv).unwrap();
        assert_eq!(back.callers, [good], "{csv}");
    }
    // From the command line: exit 2, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let (t, map, out) = (
        dir.path().join("t.trace"),
        dir.path().join("System.map"),
        dir.path().join("o.csv"),
    );
    std::fs::write(&t, format!("{HEAD}{ANY} {FIELDS}\n")).unwrap();
    std::fs::write(&map, "ffffffff81000100 t evil,from\n").unwrap();
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&t)
        .arg("--kallsyms")
        .arg(&map)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("caller column cannot hold"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

/// One line of 3 MB of fields is read in time linear in its length (the
/// column of each field is counted on from the last one). The bound below
/// only catches a hang: the quadratic count took over a minute here.
#[test]
fn a_line_of_megabytes() {
    let mut line = format!("{HEAD}{ANY} ");
    while line.len() < 3 << 20 {
        line.push_str("é=1 ");
    }
    line.push_str("last=zz");
    let want = line.chars().count() - 1;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(event(&line).map(|_| ()));
    });
    let got = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a 3 MB line still being read after 60 s");
    let (col, msg) = got.unwrap_err();
    assert_eq!(col, want, "{msg}");
    assert!(msg.contains("field `last`"), "{msg}");
}

/// `--summary` prints callers as the messages print input: an ESC or a
/// right-to-left override is shown escaped, never sent to the terminal.
#[test]
fn summary_escapes_callers() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("w\u{1b}]0;x\u{7}.csv");
    std::fs::write(
        &t,
        "direction,size,dst_offset,src_offset,caller\nfrom,8,0,0,\u{1b}[2Jwipe\nto,8,0,0,gpj.\u{202e}exe\nto,9,0,0,ok\n",
    )
    .unwrap();
    let o = copygen()
        .args(["record", "--summary"])
        .arg(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}') && !out.contains('\u{7}'),
        "{out:?}"
    );
    assert!(
        out.contains("\\u{1b}[2Jwipe (33.3%)") && out.contains("gpj.\\u{202e}exe (33.3%)"),
        "{out}"
    );
    assert!(out.starts_with("w\\u{1b}]0;x\\u{7}: 3 calls"), "{out}");
}
