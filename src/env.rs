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
