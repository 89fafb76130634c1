//! The flags `linklab emu` took before its verbs (`--board B --cost`, `--embassy`, ...), kept
//! one round: hidden from the help, they are respelled into the new command line, which is
//! printed (stderr) and then run.
//!
//! | old                                  | new                                   |
//! |--------------------------------------|---------------------------------------|
//! | `--board B`                          | `B` (after the verb, if any)          |
//! | `--cost`, `--throughput`, `--predict`, `--blast`, `--phy10` | the verb of that name |
//! | `--cost-parts`                       | `parts`                               |
//! | `--embassy`, `--serial`              | `--image embassy`, `--image serial`   |
//! | `--phy10-line`                       | `--image soft-phy`                    |
//! | `--image ELF` with one of those      | `--image NAME --elf ELF`              |
//! | `--blast-ms MS`                      | `--ms MS`                             |
//! | `--phy10 --image ELF`                | `phy10 B --elf ELF`                   |

use std::path::PathBuf;

use clap::Parser;

use crate::values;

/// The old flags (all hidden).
#[derive(clap::Args, Debug, Default)]
pub struct OldFlags {
    /// Old spelling of the board (now the first argument).
    #[arg(long = "board", id = "old_board", value_name = "BOARD", hide = true)]
    board: Option<String>,
    /// Old spelling of `cost`.
    #[arg(long, hide = true)]
    cost: bool,
    /// Old spelling of `parts`.
    #[arg(long, hide = true)]
    cost_parts: bool,
    /// Old spelling of `predict`.
    #[arg(long, hide = true)]
    predict: bool,
    /// Old spelling of `predict --runs`.
    #[arg(long, value_name = "N", hide = true)]
    runs: Option<String>,
    /// Old spelling of `throughput`.
    #[arg(long, hide = true)]
    throughput: bool,
    /// Old spelling of `--image serial`.
    #[arg(long, hide = true)]
    serial: bool,
    /// Old spelling of `--image embassy`.
    #[arg(long, hide = true)]
    embassy: bool,
    /// Old spelling of `phy10`.
    #[arg(long, hide = true)]
    phy10: bool,
    /// Old spelling of `--image soft-phy`.
    #[arg(long, hide = true)]
    phy10_line: bool,
    /// Old spelling of `blast`.
    #[arg(long, hide = true)]
    blast: bool,
    /// Old spelling of `blast --ms`.
    #[arg(long, value_name = "MS", hide = true)]
    blast_ms: Option<String>,
    /// Old spelling of a verb's `--json`.
    #[arg(long, value_name = "FILE", hide = true)]
    json: Option<PathBuf>,
}

impl OldFlags {
    /// True when any old flag was given.
    pub fn any(&self) -> bool {
        self.board.is_some()
            || self.cost
            || self.cost_parts
            || self.predict
            || self.runs.is_some()
            || self.throughput
            || self.serial
            || self.embassy
            || self.phy10
            || self.phy10_line
            || self.blast
            || self.blast_ms.is_some()
            || self.json.is_some()
    }
}

/// `linklab emu` parsed again, from a respelled command line.
#[derive(Parser)]
#[command(name = "linklab emu")]
struct Respelled {
    #[command(flatten)]
    args: super::Args,
}

/// This process's `linklab emu` arguments in the new spelling, said on stderr, and parsed.
pub fn respelled() -> anyhow::Result<super::Args> {
    let argv: Vec<String> = std::env::args().collect();
    let at = argv
        .iter()
        .position(|a| a == "emu")
        .map_or(argv.len(), |i| i + 1);
    let new = respell(&argv[at..])?;
    eprintln!(
        "linklab emu: the old flags work this round; this is now spelled: linklab emu {}",
        new.join(" ")
    );
    let parsed = Respelled::try_parse_from(std::iter::once("emu".to_string()).chain(new))
        .map_err(|e| values::usage(values::one_line(&e.render().to_string())))?;
    Ok(parsed.args)
}

/// The old arguments `old` (after `emu`) in the new spelling.
pub fn respell(old: &[String]) -> anyhow::Result<Vec<String>> {
    let mut verb = None;
    let mut board = None;
    let mut image_name = None;
    let mut rest: Vec<String> = Vec::new();
    let mut image_value = None;
    let mut it = old.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let value = |it: &mut std::slice::Iter<'_, String>| -> anyhow::Result<String> {
            match inline.clone().or_else(|| it.next().cloned()) {
                Some(v) => Ok(v),
                None => Err(values::usage(format!("{flag}: a value is missing"))),
            }
        };
        match flag {
            "--board" => board = Some(value(&mut it)?),
            "--cost" => verb = Some("cost"),
            "--cost-parts" => verb = Some("parts"),
            "--predict" => verb = Some("predict"),
            "--throughput" => verb = Some("throughput"),
            "--blast" => verb = Some("blast"),
            "--phy10" => verb = Some("phy10"),
            "--embassy" | "--serial" | "--phy10-line" => {
                if image_name.is_some() {
                    return Err(values::usage(format!(
                        "{flag}: one image at a time (--embassy, --serial and --phy10-line are now --image NAME)"
                    )));
                }
                image_name = Some(match flag {
                    "--embassy" => "embassy",
                    "--serial" => "serial",
                    _ => "soft-phy",
                });
            }
            "--image" => image_value = Some(value(&mut it)?),
            "--blast-ms" => rest.extend(["--ms".to_string(), value(&mut it)?]),
            _ => rest.push(arg.clone()),
        }
    }
    let mut new: Vec<String> = verb.map(String::from).into_iter().collect();
    new.extend(board);
    match (verb, image_name, image_value) {
        (Some("phy10"), _, Some(elf)) => new.extend(["--elf".to_string(), elf]),
        (_, Some(name), Some(elf)) => new.extend([
            "--image".to_string(),
            name.to_string(),
            "--elf".to_string(),
            elf,
        ]),
        (_, Some(name), None) => new.extend(["--image".to_string(), name.to_string()]),
        (_, None, Some(value)) => new.extend(["--image".to_string(), value]),
        (_, None, None) => {}
    }
    new.extend(rest);
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn respelled(old: &str) -> String {
        let argv: Vec<String> = old.split_whitespace().map(String::from).collect();
        respell(&argv).unwrap().join(" ")
    }

    #[test]
    fn every_old_flag_has_its_new_spelling() {
        for (old, new) in [
            ("--board mps2-an385 --cost", "cost mps2-an385"),
            (
                "--board riscv32-virt --embassy --cost-parts --json f.json",
                "parts riscv32-virt --image embassy --json f.json",
            ),
            (
                "--board=riscv32-virt --phy10-line --throughput --icount 4",
                "throughput riscv32-virt --image soft-phy --icount 4",
            ),
            (
                "--board mps2-an385 --tap t0 --ip 198.18.0.2/24 --serial",
                "mps2-an385 --image serial --tap t0 --ip 198.18.0.2/24",
            ),
            (
                "--board riscv32-virt --phy10-line --bad-captures --tap t0 --ip 198.18.0.2/24",
                "riscv32-virt --image soft-phy --bad-captures --tap t0 --ip 198.18.0.2/24",
            ),
            (
                "--board mps2-an385 --image minimal --cost",
                "cost mps2-an385 --image minimal",
            ),
            (
                "--board riscv32-virt --blast --blast-ms 10",
                "blast riscv32-virt --ms 10",
            ),
            (
                "--board riscv32-virt --phy10 --image bench.elf --json p.json",
                "phy10 riscv32-virt --elf bench.elf --json p.json",
            ),
            (
                "--board riscv32-virt --embassy --image e.elf --tap t0 --ip 198.18.0.2/24",
                "riscv32-virt --image embassy --elf e.elf --tap t0 --ip 198.18.0.2/24",
            ),
            (
                "--board mps2-an385 --predict --runs 5 --icount 4",
                "predict mps2-an385 --runs 5 --icount 4",
            ),
        ] {
            assert_eq!(respelled(old), new, "{old}");
        }
        assert!(respell(&["--board".to_string()]).is_err());
        let two: Vec<String> = ["--embassy", "--serial"].map(String::from).to_vec();
        assert!(respell(&two).is_err());
    }
}
