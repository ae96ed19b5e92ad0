//! The arguments of the helpers that tabulate the board test's kept
//! runs (`flood_figures`, `rtla_compare`): `[--irq N] NAME=PATH...`.

/// The console UART's IRQ on the emulated board: the default of `--irq`.
pub const CONSOLE_IRQ: u32 = 13;

/// What the arguments name.
#[derive(Debug, PartialEq, Eq)]
pub struct KeptRuns {
    /// The IRQ to count and compare (`--irq N`).
    pub irq: u32,
    /// Each run's name and path, in order.
    pub runs: Vec<(String, String)>,
}

/// Parses `[--irq N] NAME=PATH...` (`path` names what PATH is, for the
/// usage line). The error is the one line to print.
pub fn parse(
    prog: &str,
    path: &str,
    args: impl IntoIterator<Item = String>,
) -> Result<KeptRuns, String> {
    let usage = format!("usage: {prog} [--irq N] NAME={path}...");
    let mut kept = KeptRuns {
        irq: CONSOLE_IRQ,
        runs: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        if a == "--irq" {
            kept.irq = args
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("{prog}: --irq needs a number"))?;
        } else if let Some((name, p)) = a.split_once('=') {
            kept.runs.push((name.to_string(), p.to_string()));
        } else {
            return Err(usage);
        }
    }
    if kept.runs.is_empty() {
        return Err(usage);
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_the_irq_and_the_runs_in_order() {
        let k = parse("t", "FILE", args("--irq 40 b=y.lsr a=x.lsr")).unwrap();
        assert_eq!(k.irq, 40);
        assert_eq!(
            k.runs,
            vec![
                ("b".to_string(), "y.lsr".to_string()),
                ("a".to_string(), "x.lsr".to_string())
            ]
        );
        assert_eq!(parse("t", "FILE", args("a=x")).unwrap().irq, CONSOLE_IRQ);
    }

    #[test]
    fn refuses_a_bad_irq_a_bare_word_and_no_runs() {
        assert_eq!(
            parse("t", "FILE", args("--irq x a=b")),
            Err("t: --irq needs a number".to_string())
        );
        assert_eq!(
            parse("t", "STEM", args("a=b stray")),
            Err("usage: t [--irq N] NAME=STEM...".to_string())
        );
        assert_eq!(
            parse("t", "STEM", args("--irq 5")),
            Err("usage: t [--irq N] NAME=STEM...".to_string())
        );
    }
}
