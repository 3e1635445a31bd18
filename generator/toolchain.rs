//! The outside programs copygen runs, per architecture, with the Debian
//! packages that provide them: one table, so an error message, the
//! assembler call and `verify/install-deps` cannot disagree (a test checks
//! the script installs every package named here). `verify/kernel/lib.sh`
//! is checked against it too (`tests/toolchain_scripts.rs`): its
//! `kernel_init_cc` is [`Toolchain::cc`] with [`Toolchain::arch_flags`],
//! then `-static` on every arch (the boot test's init runs with no
//! libraries, where copygen's own programs link statically only under
//! qemu-user), and its `kernel_cross` the prefix of [`Toolchain::objdump`].
//! The kernel build takes its compiler flags from kbuild, not this table.

use std::io::ErrorKind;
use std::process::{Command, Output};

use anyhow::{anyhow, Context, Result};

use crate::front::strategy::Arch;

/// A program and the Debian packages it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    pub program: &'static str,
    pub packages: &'static [&'static str],
}

impl Tool {
    /// The packages, space-separated, for messages.
    pub fn package_list(&self) -> String {
        self.packages.join(" ")
    }

    pub fn command(&self) -> Command {
        Command::new(self.program)
    }

    /// Run `cmd` (built from [`Tool::command`]); a missing program is an
    /// error naming the packages to install.
    pub fn output(&self, cmd: &mut Command) -> Result<Output> {
        match cmd.output() {
            Ok(o) => Ok(o),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(anyhow!(
                "`{}` not found: install the Debian package(s) {} (verify/install-deps does)",
                self.program,
                self.package_list()
            )),
            Err(e) => Err(e).with_context(|| format!("running {}", self.program)),
        }
    }
}

/// How to build, inspect and run code for one architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolchain {
    /// The C compiler driver: assembles `.S` files and links programs.
    pub cc: Tool,
    /// Driver flags that select the architecture's code (`-m32`).
    pub arch_flags: &'static [&'static str],
    /// More flags for linking a user-space program.
    pub link_flags: &'static [&'static str],
    /// More flags for assembling a file that is checked, not run: the
    /// assembler then accepts every instruction the core may have (ARMv6:
    /// VFP), so the static check, not the assembler, reports one, with its
    /// line.
    pub check_flags: &'static [&'static str],
    pub objdump: Tool,
    /// What runs a linked program on this host, with its arguments.
    pub runner: Option<(Tool, &'static [&'static str])>,
}

pub const GIT: Tool = Tool {
    program: "git",
    packages: &["git"],
};

const X86_64: Toolchain = Toolchain {
    cc: Tool {
        program: "gcc",
        packages: &["gcc"],
    },
    arch_flags: &[],
    link_flags: &[],
    check_flags: &[],
    objdump: Tool {
        program: "objdump",
        packages: &["binutils"],
    },
    runner: None,
};

const I386: Toolchain = Toolchain {
    // Plain gcc-multilib conflicts with the ARM cross compilers on Debian 12.
    cc: Tool {
        program: "gcc",
        packages: &["gcc-12-multilib"],
    },
    arch_flags: &["-m32"],
    link_flags: &[],
    check_flags: &[],
    objdump: X86_64.objdump,
    runner: None,
};

const ARMV6: Toolchain = Toolchain {
    // Debian's armhf libc is ARMv7 Thumb-2 and dies on an ARM1176: armel,
    // linked statically.
    cc: Tool {
        program: "arm-linux-gnueabi-gcc",
        packages: &["gcc-arm-linux-gnueabi", "libc6-dev-armel-cross"],
    },
    arch_flags: &["-march=armv6", "-marm"],
    link_flags: &["-static"],
    check_flags: &["-mfpu=vfp"],
    objdump: Tool {
        program: "arm-linux-gnueabi-objdump",
        packages: &["binutils-arm-linux-gnueabi"],
    },
    runner: Some((
        Tool {
            program: "qemu-arm",
            packages: &["qemu-user"],
        },
        &["-cpu", "arm1176"],
    )),
};

const AARCH64: Toolchain = Toolchain {
    cc: Tool {
        program: "aarch64-linux-gnu-gcc",
        packages: &["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"],
    },
    arch_flags: &[],
    // Static, so qemu-aarch64 needs no sysroot.
    link_flags: &["-static"],
    check_flags: &[],
    objdump: Tool {
        program: "aarch64-linux-gnu-objdump",
        // binutils-aarch64-linux-gnu, pulled in by the compiler.
        packages: &["gcc-aarch64-linux-gnu"],
    },
    runner: Some((
        Tool {
            program: "qemu-aarch64",
            packages: &["qemu-user"],
        },
        &[],
    )),
};

const RISCV64: Toolchain = Toolchain {
    cc: Tool {
        program: "riscv64-linux-gnu-gcc",
        packages: &["gcc-riscv64-linux-gnu", "libc6-dev-riscv64-cross"],
    },
    arch_flags: &[],
    // Static, so qemu-riscv64 needs no sysroot.
    link_flags: &["-static"],
    check_flags: &[],
    objdump: Tool {
        program: "riscv64-linux-gnu-objdump",
        // binutils-riscv64-linux-gnu, pulled in by the compiler.
        packages: &["gcc-riscv64-linux-gnu"],
    },
    runner: Some((
        Tool {
            program: "qemu-riscv64",
            packages: &["qemu-user"],
        },
        &[],
    )),
};

/// What boots a RISC-V kernel (`qemu-system-riscv64` with OpenSBI's
/// firmware): not run by copygen itself, listed so `verify/install-deps`
/// installs it for the kernel boot test.
pub const RISCV64_SYSTEM: Tool = Tool {
    program: "qemu-system-riscv64",
    packages: &["qemu-system-misc", "opensbi"],
};

pub fn toolchain(arch: Arch) -> &'static Toolchain {
    match arch {
        Arch::X86_64 => &X86_64,
        Arch::I386 => &I386,
        Arch::Armv6 => &ARMV6,
        Arch::Aarch64 => &AARCH64,
        Arch::Riscv64 => &RISCV64,
    }
}

/// Every tool of every architecture (for the install script's test).
pub fn all_tools() -> Vec<Tool> {
    let mut v = vec![GIT, RISCV64_SYSTEM];
    for arch in Arch::ALL {
        let tc = toolchain(arch);
        v.extend([tc.cc, tc.objdump]);
        v.extend(tc.runner.map(|(t, _)| t));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `verify/install-deps` installs every package this table names.
    #[test]
    fn install_deps_installs_every_package() {
        let script = include_str!("../verify/install-deps");
        let listed: Vec<&str> = script
            .lines()
            .skip_while(|l| !l.starts_with("packages=("))
            .skip(1)
            .take_while(|l| !l.starts_with(')'))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for tool in all_tools() {
            for p in tool.packages {
                assert!(
                    listed.contains(p),
                    "{p} (for {}) is not in verify/install-deps: {listed:?}",
                    tool.program
                );
            }
        }
    }
}
