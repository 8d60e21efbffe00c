//! The admin's look at the server itself: `server/doctor`, the checks only the server can make
//! for `rummy doctor` — the database takes a write, each provider answers, each model's context
//! length is known, and what the command sandbox found at start-up.

use crate::errors::Error;
use crate::health;
use crate::services::sandbox::{Mode, Sandbox};
use crate::session::auth::{caller, require_admin};
use crate::session::call::Call;
use rummy_core::wire::params::NoParams;
use rummy_core::wire::results::{
    Check, DoctorReport, ModelCheck, ProviderCheck, SandboxCheck, SandboxLayer, SandboxMode,
};
use rummy_store::location::Location;
use rummy_store::models;

/// The most model aliases one report checks (each may ask its provider for a context length).
const MAX_MODELS: i64 = 200;

/// `server/doctor`: every check, each with what to do when it failed.
pub async fn server_doctor(call: Call, _: NoParams) -> Result<DoctorReport, Error> {
    require_admin(&caller(&call, None).await?, "server/doctor")?;
    let svc = call.svc().clone();
    let location = svc.config.database();
    let database = match health::database_writable(&svc.store).await {
        Ok(()) => Check {
            ok: true,
            detail: format!("{} takes writes", location.display()),
        },
        Err(why) => {
            let what_to_do = match location {
                Location::Sqlite(_) => "check that the disk has room and that the server's user may write the file and its directory",
                Location::Postgres(_) => "check that PostgreSQL runs and has room, and that RUMMY_DATABASE_URL's role may write its tables",
            };
            Check {
                ok: false,
                detail: format!(
                    "{} does not take writes ({why}): {what_to_do}",
                    location.display()
                ),
            }
        }
    };
    let bases: Vec<(&'static str, String)> = svc.config.configured_providers();
    let providers = svc
        .providers
        .list_models()
        .await
        .into_iter()
        .map(|(name, answer)| {
            let base_url = bases
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, base)| base.clone())
                .unwrap_or_default();
            let check = match answer {
                Ok(n) => Check {
                    ok: true,
                    detail: format!("answers: {n} models listed"),
                },
                Err(why) => Check {
                    ok: false,
                    detail: format!("does not answer: {why}; check that it runs at {base_url} and that its key is right"),
                },
            };
            ProviderCheck {
                name: name.to_owned(),
                base_url,
                check,
            }
        })
        .collect();
    let listed = svc.store.read(|c| models::list(c, MAX_MODELS, 0)).await?;
    let mut checked = Vec::new();
    for model in listed {
        let check = match svc.providers.route(&model) {
            Err(why) => (None, Check { ok: false, detail: why }),
            Ok(_) => match svc.providers.context_length(&model).await {
                Some(n) => (
                    Some(i64::from(n)),
                    Check {
                        ok: true,
                        detail: format!("context length {n}"),
                    },
                ),
                None => (
                    None,
                    Check {
                        ok: false,
                        detail: format!(
                            "context length unknown: the provider does not say; set RUMMY_CONTEXT_{}=<tokens>",
                            model.alias
                        ),
                    },
                ),
            },
        };
        checked.push(ModelCheck {
            alias: model.alias,
            actual: model.actual,
            context_length: check.0,
            check: check.1,
        });
    }
    Ok(DoctorReport {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        database,
        providers,
        models: checked,
        sandbox: sandbox_check(&svc.sandbox),
    })
}

/// The sandbox's mode and every layer its probe found, in the order they are set up from the
/// outside in (the user namespace first, the limits last).
fn sandbox_check(sandbox: &Sandbox) -> SandboxCheck {
    let (mode, missing) = match sandbox.mode() {
        Mode::Confined => (SandboxMode::Confined, String::new()),
        Mode::Unconfined(missing) => (SandboxMode::Unconfined, missing.clone()),
        Mode::Refused(missing) => (SandboxMode::Refused, missing.clone()),
    };
    let report = sandbox.report();
    let mut layers = report.layers.clone();
    // A required layer the probe was silent on counts as missing: listed so.
    for silent in report.missing() {
        if !layers.iter().any(|l| l.name == silent.name) {
            layers.push(silent);
        }
    }
    layers.sort_by_key(|l| l.name);
    let layers = layers
        .into_iter()
        .map(|layer| SandboxLayer {
            name: serde_json::to_value(layer.name)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            label: layer.name.label().to_owned(),
            required: layer.name.required(),
            check: Check {
                ok: layer.ok,
                detail: layer.detail,
            },
        })
        .collect();
    SandboxCheck {
        mode,
        missing,
        layers,
    }
}
