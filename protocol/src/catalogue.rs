//! `discover`'s answer: the methods and notifications a server serves, with their params and
//! payloads, and the run statuses, stop reasons and error codes it uses.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The catalogue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalogue {
    /// The protocol version the server speaks.
    #[serde(default)]
    pub protocol_version: String,
    /// Methods by name.
    pub methods: BTreeMap<String, MethodDoc>,
    /// Notifications by name.
    #[serde(default)]
    pub notifications: BTreeMap<String, NotificationDoc>,
    /// Run statuses (their codes as text) and what each means.
    #[serde(default)]
    pub run_statuses: BTreeMap<String, String>,
    /// Stop reasons and what each means.
    #[serde(default)]
    pub stop_reasons: BTreeMap<String, String>,
    /// Error codes (as text) and their `data.kind`.
    #[serde(default)]
    pub errors: BTreeMap<String, String>,
}

/// One method of the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodDoc {
    /// What it does and what it answers.
    #[serde(default)]
    pub description: String,
    /// Its params by name.
    #[serde(default)]
    pub params: BTreeMap<String, ParamDoc>,
    /// Whether `rummy/hello` must come first.
    #[serde(default)]
    pub requires_hello: bool,
}

/// One param of a method, or one field of a notification's payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParamDoc {
    /// JSON type (`string`, `integer`, `number`, `boolean`, `object`, `array`).
    #[serde(rename = "type", default)]
    pub ty: String,
    /// Whether the call fails without it (for a payload: whether it is always present).
    #[serde(default)]
    pub required: bool,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Other spellings accepted for it; left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The values it takes, when they are a fixed set; left out otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// One notification of the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationDoc {
    /// When it is sent and what it carries.
    #[serde(default)]
    pub description: String,
    /// The fields of its params by name.
    #[serde(default)]
    pub payload: BTreeMap<String, ParamDoc>,
}
