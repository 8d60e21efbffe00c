//! How the commands the server runs are confined: the paths they read besides the system's,
//! where their per-project `HOME`s live, network, limits, and whether the server may run them
//! unconfined where a required layer is missing.

use super::{invalid, switch, ConfigError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The command sandbox's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `RUMMY_UNSANDBOXED_COMMANDS` (off): run commands unconfined where a required layer is
    /// missing, instead of refusing them.
    pub unsandboxed: bool,
    /// `RUMMY_COMMAND_HOMES`: where each project's command `HOME` is kept (default: beside
    /// `RUMMY_HOME`, its path with `-homes` added; see [`SandboxSettings::homes_for`]).
    pub homes: Option<PathBuf>,
    /// `RUMMY_COMMAND_READ_PATHS`: further paths commands may read (`:`-separated).
    pub read_paths: Vec<PathBuf>,
    /// `RUMMY_COMMAND_NETWORK` (off): commands reach the network (a project's `commandNetwork`
    /// overrides it).
    pub network: bool,
    /// `RUMMY_COMMAND_NETWORK_PORTS` (80, 443): the TCP ports a command with network may
    /// connect to.
    pub network_ports: Vec<u16>,
    /// `RUMMY_COMMAND_MEMORY` (2 GiB): memory per command (data per process where rlimits
    /// stand in for a cgroup).
    pub memory_bytes: u64,
    /// `RUMMY_COMMAND_PIDS` (512): processes and threads per command.
    pub pids: u64,
    /// `RUMMY_COMMAND_TMP` (1 GiB): size of a command's private `/tmp`.
    pub tmp_bytes: u64,
    /// The executable that confines commands (`<it> __sandbox run`): the running one unless
    /// set; tests, whose process is not `rummy`, set it.
    pub helper: Option<PathBuf>,
}

const GIB: u64 = 1024 * 1024 * 1024;

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            unsandboxed: false,
            homes: None,
            read_paths: Vec::new(),
            network: false,
            network_ports: vec![80, 443],
            memory_bytes: 2 * GIB,
            pids: 512,
            tmp_bytes: GIB,
            helper: None,
        }
    }
}

impl SandboxSettings {
    /// Reads the settings over the defaults.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<SandboxSettings, ConfigError> {
        let mut s = SandboxSettings::default();
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        s.unsandboxed = switch(vars, "RUMMY_UNSANDBOXED_COMMANDS", s.unsandboxed)?;
        s.network = switch(vars, "RUMMY_COMMAND_NETWORK", s.network)?;
        if let Some(dir) = get("RUMMY_COMMAND_HOMES") {
            s.homes = Some(absolute("RUMMY_COMMAND_HOMES", dir)?);
        }
        if let Some(list) = get("RUMMY_COMMAND_READ_PATHS") {
            s.read_paths = list
                .split(':')
                .filter(|p| !p.is_empty())
                .map(|p| absolute("RUMMY_COMMAND_READ_PATHS", p))
                .collect::<Result<_, _>>()?;
        }
        if let Some(list) = get("RUMMY_COMMAND_NETWORK_PORTS") {
            s.network_ports = list
                .split([',', ' '])
                .filter(|p| !p.is_empty())
                .map(|p| match p.parse::<u16>() {
                    Ok(port) if port > 0 => Ok(port),
                    _ => Err(invalid(
                        "RUMMY_COMMAND_NETWORK_PORTS",
                        list,
                        "expected TCP ports (1-65535), comma-separated",
                    )),
                })
                .collect::<Result<_, _>>()?;
        }
        s.memory_bytes = bytes(vars, "RUMMY_COMMAND_MEMORY", s.memory_bytes)?;
        s.tmp_bytes = bytes(vars, "RUMMY_COMMAND_TMP", s.tmp_bytes)?;
        if let Some(n) = get("RUMMY_COMMAND_PIDS") {
            s.pids = n.parse().ok().filter(|&n: &u64| n >= 8).ok_or_else(|| {
                invalid(
                    "RUMMY_COMMAND_PIDS",
                    n,
                    "expected a whole number of 8 or more",
                )
            })?;
        }
        Ok(s)
    }

    /// Where the project `HOME`s are for a server whose home is `home`.
    pub fn homes_for(&self, home: &Path) -> PathBuf {
        self.homes.clone().unwrap_or_else(|| {
            let mut name = home.as_os_str().to_owned();
            name.push("-homes");
            PathBuf::from(name)
        })
    }
}

/// An absolute path, or the variable's error.
fn absolute(name: &str, value: &str) -> Result<PathBuf, ConfigError> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(invalid(name, value, "expected an absolute path"))
    }
}

/// A size: bytes, or a number with `K`, `M` or `G` (powers of 1024; `KiB`, `MB`… alike).
fn bytes(vars: &BTreeMap<String, String>, name: &str, default: u64) -> Result<u64, ConfigError> {
    let Some(value) = vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    let upper = value.to_ascii_uppercase();
    let digits = upper.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = upper[digits.len()..]
        .trim_end_matches('B')
        .trim_end_matches('I');
    let scale = match unit {
        "" => 1,
        "K" => 1024,
        "M" => 1024 * 1024,
        "G" => GIB,
        _ => 0,
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n >= 1024 * 1024)
        .ok_or_else(|| {
            invalid(
                name,
                value,
                "expected a size of 1M or more (bytes, or K, M, G)",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    fn read(pairs: &[(&str, &str)]) -> Result<SandboxSettings, (String, String)> {
        SandboxSettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
    }

    /// Without variables: sandboxed, no network (80 and 443 once on), 2 GiB, 512 processes,
    /// a 1 GiB /tmp, and homes beside the server's home.
    #[test]
    fn defaults() {
        let s = read(&[]).unwrap();
        assert_eq!(s, SandboxSettings::default());
        assert_eq!(
            (s.memory_bytes, s.pids, s.tmp_bytes, s.network_ports.clone()),
            (2 << 30, 512, 1 << 30, vec![80, 443])
        );
        assert_eq!(
            s.homes_for(Path::new("/var/lib/rummy")),
            PathBuf::from("/var/lib/rummy-homes")
        );
    }

    /// Every variable is read; sizes take K, M and G suffixes.
    #[test]
    fn reads_every_variable() {
        assert_eq!(
            read(&[
                ("RUMMY_UNSANDBOXED_COMMANDS", "1"),
                ("RUMMY_COMMAND_HOMES", "/srv/homes"),
                ("RUMMY_COMMAND_READ_PATHS", "/nix:/srv/tools"),
                ("RUMMY_COMMAND_NETWORK", "on"),
                ("RUMMY_COMMAND_NETWORK_PORTS", "443, 8443"),
                ("RUMMY_COMMAND_MEMORY", "512M"),
                ("RUMMY_COMMAND_PIDS", "64"),
                ("RUMMY_COMMAND_TMP", "2GiB"),
            ]),
            Ok(SandboxSettings {
                unsandboxed: true,
                homes: Some("/srv/homes".into()),
                read_paths: vec!["/nix".into(), "/srv/tools".into()],
                network: true,
                network_ports: vec![443, 8443],
                memory_bytes: 512 << 20,
                pids: 64,
                tmp_bytes: 2 << 30,
                helper: None,
            })
        );
    }

    /// Relative paths, bad ports and sizes, and too few processes are refused, naming the variable.
    #[test]
    fn refuses_bad_values() {
        let names: Vec<String> = [
            read(&[("RUMMY_COMMAND_HOMES", "homes")]),
            read(&[("RUMMY_COMMAND_READ_PATHS", "/nix:tools")]),
            read(&[("RUMMY_COMMAND_NETWORK_PORTS", "80,http")]),
            read(&[("RUMMY_COMMAND_MEMORY", "2X")]),
            read(&[("RUMMY_COMMAND_TMP", "100")]),
            read(&[("RUMMY_COMMAND_PIDS", "2")]),
        ]
        .into_iter()
        .map(|r| r.unwrap_err().0)
        .collect();
        assert_eq!(
            names,
            [
                "RUMMY_COMMAND_HOMES",
                "RUMMY_COMMAND_READ_PATHS",
                "RUMMY_COMMAND_NETWORK_PORTS",
                "RUMMY_COMMAND_MEMORY",
                "RUMMY_COMMAND_TMP",
                "RUMMY_COMMAND_PIDS"
            ]
        );
    }
}
