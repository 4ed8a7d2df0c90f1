//! A command line clap refused, said on stderr: one line naming the
//! problem and the help of the command it was given to (`llmgw simulate
//! --help`), or, for a command given nothing to do (a bare `llmgw`,
//! `llmgw bundle`), that command's help. Either way exit 2.

use clap::error::ErrorKind;

/// What to print on stderr for the command line `args` (the program's
/// name first), which clap refused with `e`.
pub fn refused(e: &clap::Error, args: &[String]) -> String {
    let text = e.render().to_string();
    let command = command_of(args);
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // Nothing to do was given: the command's help, which lists its subcommands.
        let help = if command == "llmgw" { top_level_help() } else { text };
        return format!("{}\n", help.trim_end());
    }
    // One line: clap's message and what it lists, without usage and tips.
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    // A URL given with credentials (`--offline-base https://user:token@…`) is echoed without them.
    let line = args.iter().filter(|a| a.contains("://")).fold(said.join(" "), |line, a| {
        let shown = llmgw_model::text::without_credentials(a);
        if shown == *a { line } else { line.replace(a.as_str(), &shown) }
    });
    format!("llmgw: {line} (see {command} --help)\n")
}

/// The command `args` ask for (`llmgw`, `llmgw simulate`, `llmgw bundle
/// create`): its subcommands as far as they are known, options skipped.
fn command_of(args: &[String]) -> String {
    use clap::CommandFactory;
    let mut command = super::Cli::command();
    let mut words = vec!["llmgw".to_string()];
    for arg in args.iter().skip(1).filter(|a| !a.starts_with('-')) {
        let Some(sub) = command.find_subcommand(arg).cloned() else { break };
        words.push(sub.get_name().to_string());
        command = sub;
    }
    words.join(" ")
}

/// `llmgw --help`, as it prints it.
fn top_level_help() -> String {
    use clap::CommandFactory;
    super::Cli::command().render_long_help().to_string()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn refusal(args: &[&str]) -> String {
        let e = super::super::Cli::try_parse_from(args).expect_err("refused");
        refused(&e, &args.iter().map(ToString::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn a_subcommand_error_points_to_that_subcommand() {
        let said = refusal(&["llmgw", "simulate", "--host"]);
        assert!(said.ends_with("(see llmgw simulate --help)\n"), "{said}");
        let said = refusal(&["llmgw", "-v", "simulate", "--bogus"]);
        assert!(said.ends_with("(see llmgw simulate --help)\n"), "{said}");
        assert_eq!(said.lines().count(), 1);
        let said = refusal(&["llmgw", "bundle", "create", "--bogus"]);
        assert!(said.ends_with("(see llmgw bundle create --help)\n"), "{said}");
        let said = refusal(&["llmgw", "nope"]);
        assert!(said.contains("unrecognized subcommand 'nope'") && said.ends_with("(see llmgw --help)\n"), "{said}");
    }

    #[test]
    fn nothing_to_do_prints_the_commands() {
        let said = refusal(&["llmgw"]);
        assert_eq!(said, format!("{}\n", top_level_help().trim_end()));
        assert!(said.contains("Commands:") && said.contains("simulate"), "{said}");
        let said = refusal(&["llmgw", "bundle"]);
        assert!(said.contains("create") && said.contains("import"), "{said}");
    }
}
