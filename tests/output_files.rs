//! `-o` writes the user's files as they are: regular files replaced
//! atomically with normal permissions, symbolic links followed, devices and
//! FIFOs written as streams, a set all-or-nothing.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

const STRATEGY: &str = "name = \"t\"\ndescription = \"test\"\narch = \"x86_64\"\n\n\
     [methods.bytes]\nkind = \"bytes\"\n\n[[dispatch]]\nsizes = \"0..\"\nuse = \"bytes\"\n";

fn emit(dir: &Path, args: &str) -> Output {
    let bin = env!("CARGO_BIN_EXE_copygen");
    // umask is per process: set it in a shell for the one run.
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask 022 && exec {bin} emit t.toml {args}"))
        .current_dir(dir)
        .output()
        .unwrap()
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.toml"), STRATEGY).unwrap();
    dir
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_new_file_gets_0666_less_the_umask_and_an_existing_one_keeps_its_mode() {
    let dir = setup();
    ok(&emit(dir.path(), "--flavor linux -o new.S"));
    assert_eq!(mode(&dir.path().join("new.S")), 0o644);
    let old = dir.path().join("old.S");
    std::fs::write(&old, "old").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
    ok(&emit(dir.path(), "--flavor linux -o old.S"));
    assert_eq!(mode(&old), 0o640);
    assert!(std::fs::read_to_string(&old)
        .unwrap()
        .contains("t_from_user"));
    // A set of files too, and their new folders.
    ok(&emit(dir.path(), "-o out"));
    assert_eq!(mode(&dir.path().join("out/x86_64/linux/t.S")), 0o644);
    assert_eq!(mode(&dir.path().join("out/x86_64")), 0o755);
}

#[test]
fn a_symlink_is_written_through() {
    let dir = setup();
    std::fs::write(dir.path().join("real.S"), "old").unwrap();
    std::os::unix::fs::symlink("real.S", dir.path().join("link.S")).unwrap();
    ok(&emit(dir.path(), "--flavor linux -o link.S"));
    let link = dir.path().join("link.S");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(dir.path().join("real.S"))
        .unwrap()
        .contains("t_from_user"));
}

#[test]
fn a_fifo_and_stdout_are_streams() {
    let dir = setup();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    ok(&emit(dir.path(), "--flavor linux -o pipe"));
    assert!(reader.join().unwrap().contains("t_from_user"));
    assert!(
        std::fs::metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO stays a FIFO"
    );

    let out = emit(dir.path(), "--flavor linux -o -");
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("t_from_user"));
}

#[test]
fn a_set_is_all_or_nothing() {
    let dir = setup();
    let out = dir.path().join("out");
    // The linux file can be written, the standalone one cannot: its folder
    // is a file.
    std::fs::create_dir_all(out.join("x86_64/linux")).unwrap();
    std::fs::write(out.join("x86_64/linux/t.S"), "old").unwrap();
    std::fs::write(out.join("x86_64/standalone"), "in the way").unwrap();
    let o = emit(dir.path(), "-o out");
    assert!(!o.status.success());
    assert_eq!(
        std::fs::read_to_string(out.join("x86_64/linux/t.S")).unwrap(),
        "old"
    );
    let names: Vec<_> = std::fs::read_dir(out.join("x86_64/linux"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary left behind: {names:?}");
    // A folder the failed run made is gone again.
    std::fs::remove_file(out.join("x86_64/standalone")).unwrap();
    std::fs::write(out.join("x86_64/standalone"), "in the way").unwrap();
    std::fs::remove_dir_all(out.join("x86_64/linux")).unwrap();
    assert!(!emit(dir.path(), "-o out").status.success());
    assert!(!out.join("x86_64/linux").exists());
}

#[test]
fn one_file_name_for_two_flavours_is_an_error() {
    let dir = setup();
    let o = emit(dir.path(), "-o copy_user_64.S");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--flavor"));
    assert!(
        !dir.path().join("copy_user_64.S").exists(),
        "no folder named like a file"
    );
}

/// A character device (a private copy of /dev/null's node where the
/// tests run as root, else /dev/null itself, which only root could
/// replace) is opened and written, never renamed over.
#[test]
fn a_device_is_written_not_replaced() {
    use std::os::unix::fs::MetadataExt;
    let dir = setup();
    let node = dir.path().join("null");
    let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    let dev = std::fs::metadata("/dev/null").unwrap().rdev();
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, dev as libc::dev_t) } == 0;
    let target = if made { node } else { "/dev/null".into() };
    let before = std::fs::metadata(&target).unwrap();
    ok(&emit(
        dir.path(),
        &format!("--flavor linux -o {}", target.display()),
    ));
    let after = std::fs::metadata(&target).unwrap();
    assert!(after.file_type().is_char_device());
    assert_eq!(before.ino(), after.ino());
}
