//! `--smi`: whether this CPU has the SMI counter cyclictest 2.4 reads (MSR
//! 0x34), decided as cyclictest decides it (after turbostat): an Intel
//! family 6 CPU with MSRs, of a model whose counter is known. latscope
//! reads the facts from `/proc/cpuinfo` instead of the `cpuid`
//! instruction.

/// Intel family-6 models whose SMI count MSR cyclictest 2.4 trusts, after
/// folding the models it treats as duplicates of another.
const MODELS: &[u32] = &[
    0x1E, 0x2E, 0x2A, 0x2D, 0x3A, 0x3E, 0x3C, 0x46, 0x3F, 0x45, 0x3D, 0x47, 0x4F, 0x4E, 0x66, 0x55,
    0x6A, 0x37, 0x4D, 0x4C, 0x57, 0x5C, 0x7A, 0x5F, 0x96, 0x86,
];

/// The model cyclictest 2.4 counts `model` as (its duplicates table).
fn fold(model: u32) -> u32 {
    match model {
        0x1A | 0x1E | 0x1F | 0x25 | 0x2C => 0x1E,
        0x2E | 0x2F => 0x2E,
        0x85 => 0x57,
        0x4F | 0x56 => 0x4F,
        0x4E | 0x5E | 0x8E | 0x9E | 0xA6 | 0xA5 => 0x4E,
        0x7E | 0x9D | 0x8C | 0x8D | 0xA7 | 0x8A | 0x97 | 0x9A => 0x66,
        0x9C => 0x96,
        0x6C | 0x8F => 0x6A,
        m => m,
    }
}

/// Whether the CPU described by `/proc/cpuinfo` text has the counter;
/// `Err` says why not, in cyclictest's words where it has them.
pub fn supported(cpuinfo: &str) -> Result<(), &'static str> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
        return Err("--smi is not available on your arch");
    }
    let field = |name: &str| {
        cpuinfo
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim())
            })
    };
    let intel = field("vendor_id") == Some("GenuineIntel");
    let family = field("cpu family").and_then(|v| v.parse::<u32>().ok());
    let msr = field("flags").is_some_and(|f| f.split_whitespace().any(|w| w == "msr"));
    let model = field("model").and_then(|v| v.parse::<u32>().ok());
    match (intel, family, msr, model) {
        (true, Some(6), true, Some(m)) if MODELS.contains(&fold(m)) => Ok(()),
        _ => Err("SMI counter is not supported on this processor"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(vendor: &str, family: u32, model: u32, flags: &str) -> String {
        format!(
            "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nflags\t\t: fpu {flags} tsc\n\nprocessor\t: 1\n"
        )
    }

    #[test]
    fn only_known_intel_family_6_models_with_msr() {
        if !cfg!(target_arch = "x86_64") {
            assert!(supported("").is_err());
            return;
        }
        // Skylake (0x5E folds to 0x4E), Haswell
        assert_eq!(supported(&info("GenuineIntel", 6, 0x5E, "msr")), Ok(()));
        assert_eq!(supported(&info("GenuineIntel", 6, 0x3C, "msr")), Ok(()));
        let no = Err("SMI counter is not supported on this processor");
        assert_eq!(supported(&info("AuthenticAMD", 25, 17, "msr")), no);
        assert_eq!(supported(&info("GenuineIntel", 6, 0x3C, "pae")), no);
        assert_eq!(supported(&info("GenuineIntel", 15, 0x3C, "msr")), no);
        assert_eq!(supported(&info("GenuineIntel", 6, 0x01, "msr")), no);
    }
}
