//! Context-length discovery: which requests ask a provider how long the requested model's context is, and how each answer is read.

use super::{Endpoint, ProviderKind};
use serde_json::{json, Value};

/// The HTTP method of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST` with a JSON body.
    Post,
}

/// How a probe's answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// llama.cpp's `/props`: the runtime `n_ctx`.
    LlamaProps,
    /// A model list (`data[]`): the entry for the requested model.
    ModelList,
    /// Ollama's `/api/show`: `num_ctx` if set, else the model's `*.context_length`.
    OllamaShow,
    /// One model's own description.
    ModelEntry,
}

/// One request that may reveal the context length.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: String,
    /// The JSON body of a `POST`.
    pub body: Option<Value>,
    /// How to read the answer.
    pub reader: Reader,
}

/// The probes to try, in order, for `model` (the wire name) on this provider; the first answer wins.
pub fn probes(endpoint: &Endpoint, model: &str) -> Vec<Probe> {
    let base = &endpoint.base;
    let get = |url: String, reader| Probe {
        method: Method::Get,
        url,
        body: None,
        reader,
    };
    match endpoint.kind {
        // `/props` is llama.cpp's runtime setting, truer than a model's training length.
        ProviderKind::OpenAi => vec![
            get(format!("{base}/props"), Reader::LlamaProps),
            get(format!("{base}/v1/models"), Reader::ModelList),
        ],
        ProviderKind::Ollama => vec![Probe {
            method: Method::Post,
            url: format!("{base}/api/show"),
            body: Some(json!({ "model": model })),
            reader: Reader::OllamaShow,
        }],
        ProviderKind::OpenRouter => vec![get(format!("{base}/models"), Reader::ModelList)],
        ProviderKind::Xai => vec![
            get(format!("{base}/v1/models"), Reader::ModelList),
            get(
                format!("{base}/v1/language-models/{}", path_segment(model)),
                Reader::ModelEntry,
            ),
        ],
    }
}

impl Reader {
    /// The context length this answer gives for `model`, if it gives one.
    pub fn context_length(self, body: &Value, model: &str) -> Option<i32> {
        match self {
            Reader::LlamaProps => first_positive(
                body,
                &[&["default_generation_settings", "n_ctx"], &["n_ctx"]],
            ),
            Reader::ModelList => {
                let list = body
                    .get("data")
                    .or_else(|| body.get("models"))
                    .unwrap_or(body)
                    .as_array()?;
                list.iter()
                    .find(|entry| names(entry, model))
                    .and_then(entry_length)
            }
            Reader::OllamaShow => num_ctx(body).or_else(|| {
                body.get("model_info")?
                    .as_object()?
                    .iter()
                    .find(|(key, _)| key.ends_with(".context_length"))
                    .and_then(|(_, v)| positive(v))
            }),
            Reader::ModelEntry => entry_length(body),
        }
    }
}

/// Whether a model-list entry is the requested model (by id, `<id>-latest`, or an alias).
fn names(entry: &Value, model: &str) -> bool {
    let id = entry.get("id").and_then(Value::as_str);
    id == Some(model)
        || id.is_some_and(|id| model.strip_suffix("-latest") == Some(id))
        || entry
            .get("aliases")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(model)))
}

/// The context length of one model entry, under the names servers use.
///
/// `context_length` (openrouter, LM Studio), `top_provider.context_length`
/// (openrouter), `max_model_len` (vLLM), `meta.n_ctx_train` (llama.cpp),
/// `context_window` / `max_context_length` (others).
fn entry_length(entry: &Value) -> Option<i32> {
    first_positive(
        entry,
        &[
            &["context_length"],
            &["top_provider", "context_length"],
            &["max_model_len"],
            &["meta", "n_ctx_train"],
            &["context_window"],
            &["max_context_length"],
        ],
    )
}

/// Ollama's `parameters` text, e.g. `"num_ctx 8192\nstop \"<|im_end|>\""`: the window it will really use.
fn num_ctx(show: &Value) -> Option<i32> {
    show.get("parameters")?.as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse::<i32>().ok())
            .flatten()
            .filter(|n| *n > 0)
    })
}

fn first_positive(v: &Value, paths: &[&[&str]]) -> Option<i32> {
    paths.iter().find_map(|path| {
        path.iter()
            .try_fold(v, |node, key| node.get(key))
            .and_then(positive)
    })
}

fn positive(v: &Value) -> Option<i32> {
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .filter(|n| *n > 0)
        .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
}

/// Percent-encodes a model name for use as one URL path segment.
fn path_segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests;
