//! `copygen list`: the built-in catalog, one line each, or as the markdown
//! table of `docs/catalog.md` (`--markdown`), which `--check` compares with
//! the file and `--update` writes into it.

use std::process::ExitCode;

use copygen::front::catalog::{catalog_in, checkout};
use copygen::input::BadInput;
use copygen::output::catalog_doc::{markdown_table, splice, CATALOG_DOC};

use super::{write_stdout, Failure};

#[derive(clap::Args)]
pub struct ListArgs {
    /// Print the catalog as a markdown table (name, arch, what it is,
    /// where it comes from), as docs/catalog.md holds it.
    #[arg(long)]
    markdown: bool,
    /// Exit 1 and print a diff when docs/catalog.md's table is stale.
    #[arg(long, requires = "markdown", conflicts_with = "update")]
    check: bool,
    /// Write the table into docs/catalog.md, between its marker lines.
    #[arg(long, requires = "markdown")]
    update: bool,
}

pub fn cmd_list(a: ListArgs) -> Result<ExitCode, Failure> {
    let root = checkout();
    let strategies = catalog_in(root.as_deref())?;
    if !a.markdown {
        let mut out = String::new();
        for s in &strategies {
            let first = s.description.lines().next().unwrap_or("");
            out.push_str(&format!("{:<24} {:<7} {}\n", s.name, s.arch.name(), first));
        }
        return write_stdout(out.as_bytes());
    }
    let table = markdown_table(&strategies);
    if !a.check && !a.update {
        return write_stdout(table.as_bytes());
    }
    let Some(root) = root else {
        return Err(Failure::Input(BadInput(format!(
            "error: not in a copygen checkout (no generator/strategies above the working directory): {CATALOG_DOC} is a checkout's file"
        ))));
    };
    let path = root.join(CATALOG_DOC);
    let doc = copygen::input::read_string(&path).map_err(|e| {
        Failure::Input(BadInput(format!(
            "error: {}: cannot read: {e}",
            path.display()
        )))
    })?;
    let fresh = splice(&doc, &table)
        .map_err(|e| Failure::Input(BadInput(format!("error: {}: {e}", path.display()))))?;
    if a.check {
        if fresh == doc {
            outln!("{CATALOG_DOC} is up to date");
            return Ok(ExitCode::SUCCESS);
        }
        let diff = similar::TextDiff::from_lines(&doc, &fresh)
            .unified_diff()
            .header(CATALOG_DOC, "copygen list --markdown")
            .to_string();
        out!("{diff}");
        errln!("{CATALOG_DOC} is stale: run `copygen list --markdown --update`");
        return Ok(ExitCode::from(1));
    }
    if fresh != doc {
        copygen::output::write::write_file(&path, &fresh)?;
        errln!("wrote {}", path.display());
    } else {
        errln!("{CATALOG_DOC} is up to date");
    }
    Ok(ExitCode::SUCCESS)
}
