//! Reads the configuration from the process environment over `$RUMMY_HOME/.env` (the process wins).

use rummy_core::config::{Config, ConfigError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why the configuration could not be read.
#[derive(Debug, Error)]
pub enum EnvError {
    /// A variable is set but unusable.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    /// `$RUMMY_HOME/.env` exists but cannot be read.
    #[error("cannot read {path}: {reason}")]
    DotEnv {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// `~/.rummy`, or `./.rummy` when there is no home directory.
pub fn default_home(vars: &BTreeMap<String, String>) -> PathBuf {
    vars.get("HOME")
        .filter(|h| !h.is_empty())
        .map_or_else(|| PathBuf::from(".rummy"), |h| Path::new(h).join(".rummy"))
}

/// Merges `$RUMMY_HOME/.env` under the given process variables and parses the result.
pub fn load(process: BTreeMap<String, String>) -> Result<Config, EnvError> {
    let home = process
        .get("RUMMY_HOME")
        .filter(|h| !h.trim().is_empty())
        .map_or_else(|| default_home(&process), PathBuf::from);
    let mut vars = read_dotenv(&home.join(".env"))?;
    vars.extend(process.clone());
    Ok(Config::from_vars(&vars, default_home(&process))?)
}

fn read_dotenv(path: &Path) -> Result<BTreeMap<String, String>, EnvError> {
    if !path.exists() {
        return Ok(BTreeMap::new());
    }
    let err = |reason: String| EnvError::DotEnv {
        path: path.display().to_string(),
        reason,
    };
    let mut vars = BTreeMap::new();
    for item in dotenvy::from_path_iter(path).map_err(|e| err(e.to_string()))? {
        let (key, value) = item.map_err(|e| err(e.to_string()))?;
        vars.insert(key, value);
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// `$RUMMY_HOME/.env` fills in what the process does not set; the process wins.
    #[test]
    fn process_environment_wins_over_dotenv() {
        let home = tempfile::TempDir::new().unwrap();
        std::fs::write(
            home.path().join(".env"),
            "PORT=4000\nRUMMY_MAX_TURNS=7\nRUMMY_MODEL_fast=openai/gpt-x\n",
        )
        .unwrap();
        let home_str = home.path().display().to_string();
        let config = load(vars(&[("RUMMY_HOME", &home_str), ("PORT", "5000")])).unwrap();
        assert_eq!(config.port, 5000);
        assert_eq!(config.limits.max_turns, 7);
        assert_eq!(config.models[0].actual, "openai/gpt-x");
        assert_eq!(config.db_path, home.path().join("rummy.db"));
    }

    /// Without RUMMY_HOME the home is ~/.rummy.
    #[test]
    fn home_defaults_to_dot_rummy() {
        let config = load(vars(&[("HOME", "/nonexistent-home-for-test")])).unwrap();
        assert_eq!(
            config.home,
            PathBuf::from("/nonexistent-home-for-test/.rummy")
        );
    }
}
