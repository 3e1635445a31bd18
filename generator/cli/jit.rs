//! `copygen jit`: the in-process fault suite and contract checker.

use std::path::PathBuf;
use std::process::ExitCode;

use copygen::front::diagnostics::{at_field_of, FieldPath};
use copygen::front::strategy::Arch;
use copygen::input::BadInput;

use super::{load_all, parse_arch, Failure};

#[derive(clap::Args)]
pub struct JitArgs {
    /// Strategy files or catalog names.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Architecture instead of the file's (only x86_64 runs in-process).
    #[arg(long)]
    arch: Option<String>,
}

pub fn cmd_jit(a: JitArgs) -> Result<ExitCode, Failure> {
    let JitArgs { files, arch } = a;
    let arch = parse_arch(arch)?;
    // Every input is validated before anything runs.
    let strategies = load_all(&files, arch)?;
    if let Some(s) = strategies.iter().find(|s| s.arch != Arch::X86_64) {
        let why = copygen::jit::JitError::NotExecutable(s.arch).to_string();
        return Err(Failure::Input(match arch {
            Some(a) => BadInput(format!("error: --arch {a}: {why}")),
            None => at_field_of(s, &FieldPath::root().key("arch"), why).into(),
        }));
    }
    let mut all_ok = true;
    for s in &strategies {
        let (report, ok) =
            copygen::jit::contract::run_strategy(s).map_err(|e| Failure::Other(e.into()))?;
        out!("{report}");
        all_ok &= ok;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
