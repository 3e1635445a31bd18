//! The stock kernel's x86_64 copy routine, taken from the kernel tree
//! itself: `arch/x86/lib/copy_user_64.S` built by kbuild (the tree's own
//! `<asm/alternative.h>`, `<asm/asm.h>`, ...) in a configured out-of-tree
//! build, its `.altinstructions` applied for one CPU's features as
//! `apply_alternatives()` applies them, its returns made plain `ret`s as
//! `apply_returns()` leaves them on a CPU that needs no return thunk, and
//! its relocations resolved, ready for the JIT to place beside a call site
//! (`jit::site::PlacedCode`).
//!
//! Where the tree comes from: `--tree DIR`, else
//! `$COPYGEN_KERNEL_CACHE/linux-<version>` (the verify scripts' cache),
//! else Debian's `/usr/src/linux-source-<version>.tar.xz`, unpacked once
//! into copygen's cache (`$XDG_CACHE_HOME/copygen`, `~/.cache/copygen`).
//! The build folder (`defconfig`, `prepare`, the one object) lives there
//! too and is reused while the object is newer than its source.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};

use crate::arch::cpu::{CpuFeatures, Cpuid};
use crate::checks::objfile::{self, ObjectFile};
use crate::front::variant::CpuFeature;
use crate::jit::site::PlacedCode;
use crate::kernel::extable;
use crate::kernel::nops::kernel_nops;
use crate::kernel::site::{self, SiteCode};
use crate::kernel::version::KernelVersion;

/// The object kbuild builds, relative to the tree.
pub const OBJECT: &str = "arch/x86/lib/copy_user_64.o";
/// Its source.
pub const SOURCE: &str = "arch/x86/lib/copy_user_64.S";
/// The configuration the object is built in (as `verify/kernel-routines`).
pub const CONFIG: &str = "defconfig";

/// `X86_FEATURE_*` bits (word * 32 + bit) of both trees'
/// `asm/cpufeatures.h` that the stock routines and sites test.
pub const X86_FEATURE_REP_GOOD: u16 = 3 * 32 + 16;
pub const X86_FEATURE_ALWAYS: u16 = 3 * 32 + 21;
pub const X86_FEATURE_ERMS: u16 = 9 * 32 + 9;
pub const X86_FEATURE_SMAP: u16 = 9 * 32 + 20;
pub const X86_FEATURE_FSRM: u16 = 18 * 32 + 4;

/// `X86_TRAP_PF`: what 6.1's `EX_TYPE_COPY` handler puts in `rax`.
const X86_TRAP_PF: u32 = 14;

/// The CPU features the stock kernel's copy decides on: what the site's
/// and the routine's alternatives test. SMAP is never set (its
/// alternatives are STAC/CLAC, which user space cannot run) and
/// `X86_FEATURE_ALWAYS` always is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockFeatures {
    pub erms: bool,
    pub fsrm: bool,
    /// `X86_FEATURE_REP_GOOD`, which the kernel sets by vendor and family
    /// (no CPUID bit): [`StockFeatures::from_cpuid`].
    pub rep_good: bool,
}

impl StockFeatures {
    /// The features as the kernel sets them on the CPU `c`: ERMS and FSRM
    /// from CPUID; REP_GOOD on AMD family 0x10 and later (`init_amd()`;
    /// the K8 rule for steppings C and later is left out), on Hygon
    /// (`init_hygon()`) and on Intel family 6 (`init_intel()`, unless the
    /// firmware disabled fast strings, which also clears ERMS and cannot be
    /// seen from user space).
    pub fn from_cpuid(c: &Cpuid) -> StockFeatures {
        let f = c.features();
        let vendor = c.vendor_string();
        let rep_good = match vendor.as_str() {
            "AuthenticAMD" => c.family() >= 0x10,
            "HygonGenuine" => true,
            "GenuineIntel" => c.family() == 6,
            _ => false,
        };
        StockFeatures {
            erms: f.has(CpuFeature::Erms),
            fsrm: f.has(CpuFeature::Fsrm),
            rep_good,
        }
    }

    /// This CPU's (none without CPUID).
    pub fn host() -> StockFeatures {
        Cpuid::host().map_or(
            StockFeatures {
                erms: false,
                fsrm: false,
                rep_good: false,
            },
            |c| StockFeatures::from_cpuid(&c),
        )
    }

    /// `self` changed by `spec`: comma-separated `-name` (absent) or
    /// `+name`/`name` (present), names `erms`, `fsrm`, `rep_good`.
    pub fn with(self, spec: &str) -> Result<StockFeatures, String> {
        let mut f = self;
        let mut named: Vec<&str> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (on, name) = match item.strip_prefix('-') {
                Some(n) => (false, n),
                None => (true, item.strip_prefix('+').unwrap_or(item)),
            };
            if named.contains(&name) {
                return Err(format!("`{item}`: `{name}` is named twice"));
            }
            named.push(name);
            match name {
                "erms" => f.erms = on,
                "fsrm" => f.fsrm = on,
                "rep_good" => f.rep_good = on,
                _ => {
                    return Err(format!(
                        "`{item}`: not a feature the stock kernel's copy tests (erms, fsrm, rep_good, each with - or +)"
                    ))
                }
            }
        }
        Ok(f)
    }

    /// Whether the kernel bit `bit` is set on such a CPU.
    pub fn has_bit(self, bit: u16) -> bool {
        match bit {
            X86_FEATURE_ALWAYS => true,
            X86_FEATURE_ERMS => self.erms,
            X86_FEATURE_FSRM => self.fsrm,
            X86_FEATURE_REP_GOOD => self.rep_good,
            _ => false,
        }
    }

    /// `base` with ERMS, FSRM and REP_GOOD as `self` has them: the feature
    /// set the sites (stock, patched, candidate) and the variants are
    /// resolved for (other bits kept).
    pub fn cpu_features(self, base: CpuFeatures) -> CpuFeatures {
        let ours = [
            (CpuFeature::Erms, self.erms),
            (CpuFeature::Fsrm, self.fsrm),
            (CpuFeature::RepGood, self.rep_good),
        ];
        let list: Vec<CpuFeature> = base
            .list()
            .into_iter()
            .filter(|f| !ours.iter().any(|(o, _)| o == f))
            .chain(ours.iter().filter(|(_, on)| *on).map(|(f, _)| *f))
            .collect();
        CpuFeatures::from_list(&list)
    }
}

impl std::fmt::Display for StockFeatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on: Vec<&str> = [
            (self.erms, "erms"),
            (self.fsrm, "fsrm"),
            (self.rep_good, "rep_good"),
        ]
        .iter()
        .filter(|(b, _)| *b)
        .map(|(_, n)| *n)
        .collect();
        if on.is_empty() {
            write!(f, "none of erms, fsrm, rep_good")
        } else {
            write!(f, "{}", on.join("+"))
        }
    }
}

/// The tree's object, read (unpatched), with the bytes it was read from.
#[derive(Debug, Clone)]
pub struct StockObject {
    pub kernel: KernelVersion,
    /// The tree it was built from.
    pub tree: PathBuf,
    /// The object file.
    pub path: PathBuf,
    pub obj: ObjectFile,
    data: Vec<u8>,
}

/// copygen's cache folder: `$XDG_CACHE_HOME/copygen`, else
/// `$HOME/.cache/copygen`.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("copygen"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("neither XDG_CACHE_HOME nor HOME is set: copygen has no cache folder for the kernel build"))?;
    Ok(PathBuf::from(home).join(".cache").join("copygen"))
}

/// Debian's source tarball of `kernel`.
pub fn tarball(kernel: KernelVersion) -> PathBuf {
    PathBuf::from(format!("/usr/src/linux-source-{}.tar.xz", kernel.name()))
}

/// Whether [`locate_tree`] finds a tree of `kernel` without `--tree`
/// (one unpacked, or Debian's tarball).
pub fn tree_available(kernel: KernelVersion) -> bool {
    let name = format!("linux-{}", kernel.name());
    let env = std::env::var_os("COPYGEN_KERNEL_CACHE")
        .filter(|c| !c.is_empty())
        .is_some_and(|c| PathBuf::from(c).join(&name).join(SOURCE).is_file());
    let repo = crate::front::catalog::repo_root()
        .join("verify/.cache")
        .join(&name)
        .join(SOURCE)
        .is_file();
    let cache = cache_dir().is_ok_and(|c| c.join(&name).join(SOURCE).is_file());
    env || repo || cache || tarball(kernel).is_file()
}

/// Whether `dir` is a tree of `kernel`: its Makefile's VERSION and
/// PATCHLEVEL, and the routine's source.
fn check_tree(dir: &Path, kernel: KernelVersion, what: &str) -> Result<()> {
    let makefile = dir.join("Makefile");
    let text = std::fs::read_to_string(&makefile).map_err(|e| {
        anyhow!(
            "{what} {}: no kernel tree there ({}: {e})",
            dir.display(),
            makefile.display()
        )
    })?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .trim()
                    .strip_prefix('=')
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let found = format!("{}.{}", field("VERSION"), field("PATCHLEVEL"));
    if found != kernel.name() {
        bail!(
            "{what} {}: its Makefile says Linux {found}, not {}",
            dir.display(),
            kernel.name()
        );
    }
    if !dir.join(SOURCE).is_file() {
        bail!("{what} {}: no {SOURCE} there", dir.display());
    }
    Ok(())
}

/// The tree of `kernel`: `tree` when given, else the verify scripts'
/// cache, else Debian's tarball unpacked into copygen's cache.
pub fn locate_tree(kernel: KernelVersion, tree: Option<&Path>) -> Result<PathBuf> {
    if let Some(t) = tree {
        check_tree(t, kernel, "--tree")?;
        return Ok(t.to_path_buf());
    }
    let name = format!("linux-{}", kernel.name());
    if let Some(c) = std::env::var_os("COPYGEN_KERNEL_CACHE").filter(|c| !c.is_empty()) {
        let t = PathBuf::from(c).join(&name);
        if t.join(SOURCE).is_file() {
            check_tree(&t, kernel, "COPYGEN_KERNEL_CACHE's")?;
            return Ok(t);
        }
    }
    let verify = crate::front::catalog::repo_root()
        .join("verify")
        .join(".cache")
        .join(&name);
    if verify.join(SOURCE).is_file() {
        return Ok(verify);
    }
    let cache = cache_dir()?;
    let unpacked = cache.join(&name);
    if unpacked.join(SOURCE).is_file() {
        return Ok(unpacked);
    }
    let tar = tarball(kernel);
    if !tar.is_file() {
        bail!(
            "no Linux {} tree: pass --tree DIR, set COPYGEN_KERNEL_CACHE to a folder holding {name}, or install Debian's linux-source-{} ({} is missing)",
            kernel.name(),
            kernel.name(),
            tar.display()
        );
    }
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let _lock = Lock::take(&cache.join(format!("{name}.lock")))?;
    if unpacked.join(SOURCE).is_file() {
        return Ok(unpacked);
    }
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{name}.unpack"))
        .tempdir_in(&cache)?;
    eprintln!("unpacking {} into {}", tar.display(), cache.display());
    let out = Command::new("tar")
        .arg("-xJf")
        .arg(&tar)
        .arg("-C")
        .arg(tmp.path())
        .output()
        .context("running tar")?;
    if !out.status.success() {
        bail!(
            "tar could not unpack {}: {}",
            tar.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let top = tmp.path().join(format!("linux-source-{}", kernel.name()));
    std::fs::rename(&top, &unpacked).with_context(|| {
        format!(
            "{}: no linux-source-{} folder in it",
            tar.display(),
            kernel.name()
        )
    })?;
    Ok(unpacked)
}

/// An exclusive `flock` on a file, held while alive (two processes
/// building or unpacking into the same folder would race).
pub struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Wait for the lock on `path` (created if absent).
    pub fn take(path: &Path) -> Result<Lock> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; flock has no memory effects.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Lock { _file: f })
    }
}

/// The build folder of `tree`'s `kernel` in copygen's cache.
fn build_dir(kernel: KernelVersion, tree: &Path) -> Result<PathBuf> {
    let abs = tree.canonicalize().unwrap_or_else(|_| tree.to_path_buf());
    let tag: String = abs
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    Ok(cache_dir()?
        .join("kbuild")
        .join(format!("{}-x86_64{tag}", kernel.name())))
}

/// `make` in `tree` for the build folder `out`, its output in `log`.
fn make(tree: &Path, out: &Path, args: &[&str], log: &Path) -> Result<()> {
    let logf = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let status = Command::new("nice")
        .args(["-n", "10", "make", "-s", "-C"])
        .arg(tree)
        .arg(format!("O={}", out.display()))
        .arg("ARCH=x86_64")
        .args(args)
        .stdout(logf.try_clone()?)
        .stderr(logf)
        .status()
        .context(
            "running make (is it installed? verify/install-deps installs the kernel build tools)",
        )?;
    if !status.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        bail!(
            "kbuild failed: make {} in {} for {} (log {}):\n{}",
            args.join(" "),
            tree.display(),
            out.display(),
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

/// Build [`OBJECT`] of `tree` with kbuild (configured with [`CONFIG`]
/// once, `prepare`d, then the one object, serially); reused while newer
/// than its source. Returns the object's path.
pub fn build_object(kernel: KernelVersion, tree: &Path) -> Result<PathBuf> {
    let out = build_dir(kernel, tree)?;
    let obj = out.join(OBJECT);
    let newer = |o: &Path| -> bool {
        let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        matches!((m(o), m(&tree.join(SOURCE))), (Some(a), Some(b)) if a >= b)
    };
    if newer(&obj) {
        return Ok(obj);
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let _lock = Lock::take(&out.with_extension("lock"))?;
    if newer(&obj) {
        return Ok(obj);
    }
    eprintln!(
        "building {OBJECT} of Linux {} with kbuild ({CONFIG}) in {}",
        kernel.name(),
        out.display()
    );
    let log = out.join("copygen-kbuild.log");
    if !out.join(".config").is_file() {
        make(tree, &out, &[CONFIG], &log)?;
    }
    make(tree, &out, &["-j2", "prepare"], &log)?;
    // One job: a single-object target can be visited twice.
    make(tree, &out, &["-j1", OBJECT], &log)?;
    if !obj.is_file() {
        bail!("kbuild ran but wrote no {}", obj.display());
    }
    Ok(obj)
}

impl StockObject {
    /// The tree's object of `kernel`, built if needed.
    pub fn load(kernel: KernelVersion, tree: Option<&Path>) -> Result<StockObject> {
        let tree = locate_tree(kernel, tree)?;
        let path = build_object(kernel, &tree)?;
        StockObject::read(kernel, tree, path)
    }

    /// Read an object already built.
    pub fn read(kernel: KernelVersion, tree: PathBuf, path: PathBuf) -> Result<StockObject> {
        let data = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let obj = objfile::read(&data).with_context(|| format!("reading {}", path.display()))?;
        if obj.arch != crate::front::strategy::Arch::X86_64 {
            bail!("{}: not an x86_64 object", path.display());
        }
        Ok(StockObject {
            kernel,
            tree,
            path,
            obj,
            data,
        })
    }

    /// The routines a stock site of this kernel may call.
    pub fn routines(&self) -> &'static [&'static str] {
        site::stock_routines(self.kernel)
    }

    /// `.text` with every relocation resolved (before alternatives): a
    /// branch within `.text` gets its displacement, and `jmp
    /// __x86_return_thunk` (CONFIG_RETHUNK's `RET`) becomes `ret; int3`
    /// x4, as `apply_returns()` patches it on a CPU without
    /// `X86_FEATURE_RETHUNK`. Anything else is refused.
    fn linked_text(&self) -> Result<Vec<u8>> {
        let file = object::File::parse(&*self.data)?;
        let text = file
            .section_by_name(".text")
            .ok_or_else(|| anyhow!("{}: no .text", self.path.display()))?;
        let index = text.index();
        let mut code = self.obj.code.get(".text").cloned().unwrap_or_default();
        for (at, r) in text.relocations() {
            let at = at as usize;
            let RelocationTarget::Symbol(si) = r.target() else {
                bail!(
                    "{}: a relocation at .text+{at:#x} has no symbol",
                    self.path.display()
                );
            };
            let sym = file.symbol_by_index(si)?;
            let name = sym.name().unwrap_or("?").to_string();
            let field = code
                .get_mut(at..at + 4)
                .ok_or_else(|| anyhow!("a relocation at .text+{at:#x} ends past .text"))?;
            let pc_rel = matches!(
                r.flags(),
                object::RelocationFlags::Elf { r_type } if r_type == object::elf::R_X86_64_PC32 || r_type == object::elf::R_X86_64_PLT32
            );
            if sym.section_index() == Some(index) && pc_rel {
                let value = sym.address() as i64 + r.addend() - at as i64;
                field.copy_from_slice(&(value as i32).to_le_bytes());
            } else if sym.is_undefined()
                && name == "__x86_return_thunk"
                && at > 0
                && code[at - 1] == 0xe9
            {
                code[at - 1..at + 4].copy_from_slice(&[0xc3, 0xcc, 0xcc, 0xcc, 0xcc]);
            } else {
                bail!(
                    "{}: .text+{at:#x} refers to `{name}`, which placing the routine in user space cannot resolve",
                    self.path.display()
                );
            }
        }
        Ok(code)
    }

    /// The object as `apply_alternatives()` leaves it on a CPU with `f`
    /// (relocations resolved first: see `linked_text`).
    pub fn patched(&self, f: StockFeatures) -> Result<ObjectFile> {
        let mut obj = self.obj.clone();
        obj.code.insert(".text".into(), self.linked_text()?);
        obj.code_relocs.retain(|l, _| l.section != ".text");
        let nops = |n: usize| kernel_nops(self.kernel, n);
        let patched =
            crate::checks::static_verify::apply_alternatives(&obj, &|b| f.has_bit(b), &nops)
                .map_err(|e| anyhow!("{}: {e}", self.path.display()))?;
        if let Some((l, t)) = patched
            .code_relocs
            .iter()
            .find(|(l, _)| l.section == ".text")
        {
            bail!(
                "{}: the alternatives for {f} leave a relocation at {l} (to {t:?}) that user space cannot resolve",
                self.path.display()
            );
        }
        Ok(patched)
    }

    /// The routines' `.text` as a CPU with `f` runs it, for the JIT: every
    /// function symbol of the object, the exception-table entries (6.1's
    /// `EX_TYPE_COPY` entries through a stub that sets `eax` to
    /// `X86_TRAP_PF` first, as `ex_handler_copy()` does; entry types the
    /// JIT cannot model are left out, and a fault there crashes). Refused
    /// when a STAC or CLAC is left (SMAP is taken as absent, so none is).
    pub fn placed(&self, f: StockFeatures) -> Result<PlacedCode> {
        let patched = self.patched(f)?;
        let mut bytes = patched.code[".text"].clone();
        for i in objfile::decode_x86(patched.arch, &bytes, 0) {
            if matches!(
                i.mnemonic(),
                iced_x86::Mnemonic::Stac | iced_x86::Mnemonic::Clac
            ) {
                bail!(
                    "{}: `{}` at .text+{:#x} after alternatives for {f}: user space cannot run it",
                    self.path.display(),
                    objfile::format_x86(&i),
                    i.ip()
                );
            }
        }
        let symbols: Vec<(String, usize)> = patched
            .functions
            .iter()
            .filter(|s| s.section == ".text")
            .map(|s| (s.name.clone(), s.start as usize))
            .collect();
        let mut extable = Vec::new();
        let mut stubs: Vec<(u64, usize)> = Vec::new();
        for e in &patched.extable {
            if e.insn.section != ".text" || e.fixup.section != ".text" {
                continue;
            }
            match e.type_word.map(extable::x86_type) {
                None | Some(extable::X86_EX_TYPE_DEFAULT | extable::X86_EX_TYPE_UACCESS) => {
                    extable.push((e.insn.offset as u32, e.fixup.offset as u32))
                }
                Some(extable::X86_EX_TYPE_COPY)
                    if !self.kernel.x86_64_calls_rep_movs_alternative() =>
                {
                    let stub = match stubs.iter().find(|(f, _)| *f == e.fixup.offset) {
                        Some(&(_, s)) => s,
                        None => {
                            while bytes.len() % 16 != 0 {
                                bytes.push(0xcc);
                            }
                            let s = bytes.len();
                            bytes.push(0xb8);
                            bytes.extend(X86_TRAP_PF.to_le_bytes());
                            let rel = e.fixup.offset as i64 - (s + 10) as i64;
                            bytes.push(0xe9);
                            bytes.extend((rel as i32).to_le_bytes());
                            stubs.push((e.fixup.offset, s));
                            s
                        }
                    };
                    extable.push((e.insn.offset as u32, stub as u32));
                }
                Some(_) => {}
            }
        }
        Ok(PlacedCode {
            bytes,
            symbols,
            extable,
        })
    }

    /// What the stock site calls on a CPU with `f` (`None`: 6.12's inline
    /// `rep movsb`, FSRM): 6.12 `rep_movs_alternative` without FSRM; 6.1's
    /// `alternative_call_2` on REP_GOOD then ERMS.
    pub fn called(&self, f: StockFeatures) -> Option<&'static str> {
        site::stock_callee(
            self.kernel,
            f.cpu_features(CpuFeatures::default()),
            f.rep_good,
        )
    }

    /// The stock path a CPU with `f` runs, named from the patched object:
    /// the routine the site calls and what each alternative site in it
    /// holds after patching (`6.12: rep_movs_alternative; +0x4a: rep movsb
    /// (X86_FEATURE_ERMS applied)`).
    pub fn path(&self, f: StockFeatures) -> Result<String> {
        let k = self.kernel.name();
        let Some(routine) = self.called(f) else {
            return Ok(format!("{k}: inline rep movsb at the site (FSRM)"));
        };
        let patched = self.patched(f)?;
        let func = patched
            .function(routine)
            .ok_or_else(|| anyhow!("{}: no function {routine}", self.path.display()))?;
        let mut out = format!("{k}: {routine}");
        let mut seen = Vec::new();
        for e in &self.obj.alternatives {
            if !func.contains(&e.site) || seen.contains(&e.site.offset) {
                continue;
            }
            seen.push(e.site.offset);
            if e.feature == X86_FEATURE_SMAP {
                continue;
            }
            let applied: Vec<String> = self
                .obj
                .alternatives
                .iter()
                .filter(|o| o.site == e.site)
                .filter(|o| f.has_bit(o.feature) != (o.flags & objfile::ALT_FLAG_NOT != 0))
                .map(|o| feature_name(o.feature).to_string())
                .collect();
            let len = self
                .obj
                .alternatives
                .iter()
                .filter(|o| o.site == e.site)
                .map(|o| o.site_len as usize)
                .max()
                .unwrap_or(0);
            let start = e.site.offset as usize;
            let code = &patched.code[".text"][start..start + len];
            let insns: Vec<String> = objfile::decode_x86(patched.arch, code, e.site.offset)
                .iter()
                .map(objfile::format_x86)
                .collect();
            let _ = write!(
                out,
                "; +{:#x}: {} ({})",
                e.site.offset - func.start,
                insns.join("; "),
                if applied.is_empty() {
                    format!("original: no {}", feature_name(e.feature))
                } else {
                    format!("{} applied", applied.join(", "))
                }
            );
        }
        Ok(out)
    }

    /// The stock site on a CPU with `f`: 6.12's inline `rep movsb` or `call
    /// rep_movs_alternative`, 6.1's call of the routine `alternative_call_2`
    /// picks, in the C convention (`kernel::site`).
    pub fn site(&self, f: StockFeatures, base: CpuFeatures) -> SiteCode {
        site::stock_site_with(self.kernel, f.cpu_features(base), f.rep_good)
    }
}

/// The `X86_FEATURE_*` name of a bit the stock code tests.
fn feature_name(bit: u16) -> &'static str {
    match bit {
        X86_FEATURE_ERMS => "X86_FEATURE_ERMS",
        X86_FEATURE_FSRM => "X86_FEATURE_FSRM",
        X86_FEATURE_REP_GOOD => "X86_FEATURE_REP_GOOD",
        X86_FEATURE_SMAP => "X86_FEATURE_SMAP",
        X86_FEATURE_ALWAYS => "X86_FEATURE_ALWAYS",
        _ => "another feature (taken as absent)",
    }
}
