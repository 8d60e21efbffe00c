//! Model aliases and routing: `getModels`, `addModel`, `getRoutes`, `route/check` and a loop's route.

use serde::{Deserialize, Serialize};

/// One model alias of `getModels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The alias runs name.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window in tokens, once known.
    #[serde(default)]
    pub context_length: Option<i64>,
    /// Fallback alias.
    #[serde(default)]
    pub fallback: Option<String>,
    /// Whether the server's environment defines it now (`RUMMY_MODEL_<alias>`); false: the
    /// database keeps it from an earlier start's environment or an `addModel`. `None` from a
    /// server that does not say.
    #[serde(default)]
    pub configured: Option<bool>,
}

/// `addModel`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedModel {
    /// The model's id.
    pub id: i64,
    /// Its alias.
    pub alias: String,
}

/// A loop's routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// The prompt's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The model alias the loop uses.
    pub model: String,
}

/// One prompt class of `getRoutes`: the model alias routing sends it to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteClass {
    /// The class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The alias it is sent to in runs with `route: true`; `None`: such a run keeps its model.
    #[serde(default)]
    pub model: Option<String>,
    /// The server setting that maps it (`RUMMY_ROUTE_CODE`, …).
    #[serde(default)]
    pub variable: String,
}

/// `route/check`'s answer: what routing would do with a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteCheck {
    /// The text's class (`code`, `reasoning`, `default`).
    pub class: String,
    /// The alias the class maps to, if any.
    #[serde(default)]
    pub mapped: Option<String>,
    /// The run asked about, if one was named.
    #[serde(default)]
    pub run: Option<String>,
    /// Whether routing is on: the run's `route` setting; without a run, whether the server
    /// maps any class.
    #[serde(default)]
    pub routing: bool,
    /// The model a loop starting with the text would use; `None` without a run when that is the
    /// run's own model.
    #[serde(default)]
    pub model: Option<String>,
    /// The decision in words (saying why when routing is off).
    #[serde(default)]
    pub reason: String,
}
