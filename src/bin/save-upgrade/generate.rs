//! `save-upgrade --generate KIND`: the shell completions and the man page, made from the
//! clap definitions `--help` prints, written to standard output.

use clap_complete::Shell;

use super::manual;
use super::output;
use super::EXIT_OK;

/// What `--generate` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Kind {
    /// The bash completion script (share/bash-completion/completions/save-upgrade).
    CompleteBash,
    /// The zsh completion function (share/zsh/site-functions/_save-upgrade).
    CompleteZsh,
    /// The fish completions (share/fish/vendor_completions.d/save-upgrade.fish).
    CompleteFish,
    /// The man page in roff (share/man/man1/save-upgrade.1).
    Man,
}

/// Prints `kind` of `command` on standard output. A reader that closes the pipe early
/// (`| head`) ends it normally, as every other command.
pub fn run(kind: Kind, mut command: clap::Command) -> i32 {
    let name = command.get_name().to_string();
    let mut text = Vec::new();
    let shell = match kind {
        Kind::CompleteBash => Shell::Bash,
        Kind::CompleteZsh => Shell::Zsh,
        Kind::CompleteFish => Shell::Fish,
        Kind::Man => {
            output::out(&manual::page(command));
            return EXIT_OK;
        }
    };
    clap_complete::generate(shell, &mut command, name.clone(), &mut text);
    if shell == Shell::Bash {
        text = bash_arms_fixed(&text, &name);
    }
    output::out_bytes(&text);
    EXIT_OK
}

/// The bash script with the states of its subcommands spelled alike where they are set and
/// where they are matched. clap_complete 4.6 escapes the `-` of a program's name as `__`
/// where it sets the state (`save__upgrade__subcmd__list`) but as `__subcmd__` where it
/// matches it (`save__subcmd__upgrade__subcmd__list`), so no subcommand's options complete
/// (clap-rs/clap#6421); once it spells them alike, this changes nothing.
fn bash_arms_fixed(script: &[u8], name: &str) -> Vec<u8> {
    let script = String::from_utf8_lossy(script);
    let matched = format!("{}__subcmd__", name.replace('-', "__subcmd__"));
    let set = format!("{}__subcmd__", name.replace('-', "__"));
    script.replace(&matched, &set).into_bytes()
}
