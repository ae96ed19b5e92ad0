//! CPU sets as the command line writes them.

/// A CPU set as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuList {
    /// Every available CPU.
    All,
    /// These CPUs.
    Only(Vec<usize>),
    /// Every available CPU except these (`!` prefix).
    Except(Vec<usize>),
    /// The available CPUs at these positions (`+` prefix, as libnuma
    /// reads it: `+0-1` = the first two CPUs this process may use).
    Relative(Vec<usize>),
}

/// Highest CPU number accepted.
const MAX_CPU: usize = 1023;

/// Parse `0,2-3`, `!1`, `+0-1` or `all`.
pub(super) fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    if s == "all" {
        return Ok(CpuList::All);
    }
    if let Some(body) = s.strip_prefix('+') {
        return numbers(body).map(CpuList::Relative);
    }
    let (neg, body) = match s.strip_prefix('!') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let cpus = numbers(body)?;
    Ok(if neg {
        CpuList::Except(cpus)
    } else {
        CpuList::Only(cpus)
    })
}

/// `0,2-3`: the numbers in order, each once.
fn numbers(body: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for item in body.split(',') {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (a, b),
            None => (item, item),
        };
        let a: usize = a.parse().map_err(|_| format!("bad CPU '{item}'"))?;
        let b: usize = b.parse().map_err(|_| format!("bad CPU '{item}'"))?;
        if a > b || b > MAX_CPU {
            return Err(format!("bad CPU range '{item}'"));
        }
        for c in a..=b {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
        }
    }
    if cpus.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(cpus)
}

impl CpuList {
    /// The CPUs this list selects among `available`. CPUs named but not
    /// available are an error (cyclictest silently skips them).
    pub(super) fn resolve(&self, available: &[usize]) -> Result<Vec<usize>, String> {
        let v: Vec<usize> = match self {
            CpuList::All => available.to_vec(),
            CpuList::Only(c) => {
                if let Some(bad) = c.iter().find(|c| !available.contains(c)) {
                    return Err(format!(
                        "CPU {bad} is not available (available: {})",
                        list_text(available)
                    ));
                }
                c.clone()
            }
            CpuList::Except(c) => available
                .iter()
                .copied()
                .filter(|a| !c.contains(a))
                .collect(),
            CpuList::Relative(c) => {
                if let Some(bad) = c.iter().find(|&&i| i >= available.len()) {
                    return Err(format!(
                        "+{bad}: only {} CPUs are available ({})",
                        available.len(),
                        list_text(available)
                    ));
                }
                c.iter().map(|&i| available[i]).collect()
            }
        };
        if v.is_empty() {
            return Err("the CPU set selects no available CPU".into());
        }
        Ok(v)
    }
}

/// `0,1,4` for messages.
fn list_text(cpus: &[usize]) -> String {
    let mut text = String::new();
    for c in cpus {
        let comma = if text.is_empty() { "" } else { "," };
        text += &format!("{comma}{c}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,2-3"), Ok(CpuList::Only(vec![0, 2, 3])));
        assert_eq!(parse_cpu_list("!1"), Ok(CpuList::Except(vec![1])));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("0,99999").is_err());
        let avail = [0, 1, 2, 3];
        assert_eq!(CpuList::Except(vec![1]).resolve(&avail), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list("+1-2"), Ok(CpuList::Relative(vec![1, 2])));
        assert_eq!(
            CpuList::Relative(vec![1, 2]).resolve(&[4, 5, 6]),
            Ok(vec![5, 6])
        );
        assert!(CpuList::Relative(vec![3]).resolve(&[4, 5, 6]).is_err());
        assert!(CpuList::Only(vec![7]).resolve(&avail).is_err());
    }
}
