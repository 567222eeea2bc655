//! `save-upgrade chain`: describe the upgrade chain.

/// Describe the upgrade chain: the versions it knows and its steps.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  save-upgrade chain\n  save-upgrade chain --json")]
pub struct Args {
    /// Print {"latest": N, "oldest": M, "steps": [...]} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> i32 {
    // Until upgrade steps exist, the only version a save can have is 1.
    let (oldest, latest) = (1, 1);
    if args.json {
        println!("{{\"latest\": {latest}, \"oldest\": {oldest}, \"steps\": []}}");
    } else {
        println!("versions {oldest} to {latest}; no upgrade steps");
    }
    super::EXIT_OK
}
