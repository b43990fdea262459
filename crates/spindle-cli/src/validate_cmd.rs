//! `spindle validate DIR | --all DIR`: replay real drives' measured traces and score the model.

use clap::Args;

#[derive(Args)]
pub struct ValidateArgs {}

pub fn run(_args: ValidateArgs, _quiet: bool) -> anyhow::Result<()> {
    anyhow::bail!("validate is not built yet")
}
