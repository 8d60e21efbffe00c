//! Context-length probes per provider and how each provider's answer is read.

use super::*;
use crate::settings::{OllamaConfig, OpenAiConfig, OpenRouterConfig, Providers, XaiConfig};
use pretty_assertions::assert_eq;

fn endpoint(kind: ProviderKind) -> Endpoint {
    let providers = Providers {
        openai: Some(OpenAiConfig {
            base_url: "http://h".into(),
            api_key: None,
        }),
        ollama: Some(OllamaConfig {
            base_url: "http://h".into(),
        }),
        openrouter: Some(OpenRouterConfig {
            base_url: "http://h/api/v1".into(),
            api_key: None,
            referer: None,
            title: None,
        }),
        xai: Some(XaiConfig {
            base_url: "http://h".into(),
            api_key: None,
        }),
        ..Providers::default()
    };
    Endpoint::of(kind, &providers).unwrap()
}

fn get(url: &str, reader: Reader) -> Probe {
    Probe {
        method: Method::Get,
        url: url.into(),
        body: None,
        reader,
    }
}

/// Each provider is asked in its own way, for the requested model.
#[test]
fn probes_per_provider() {
    let cases = [
        (
            ProviderKind::OpenAi,
            "llama",
            vec![
                get("http://h/props", Reader::LlamaProps),
                get("http://h/v1/models", Reader::ModelList),
            ],
        ),
        (
            ProviderKind::Ollama,
            "qwen3:8b",
            vec![Probe {
                method: Method::Post,
                url: "http://h/api/show".into(),
                body: Some(json!({"model": "qwen3:8b"})),
                reader: Reader::OllamaShow,
            }],
        ),
        (
            ProviderKind::OpenRouter,
            "a/b",
            vec![get("http://h/api/v1/models", Reader::ModelList)],
        ),
        (
            ProviderKind::Xai,
            "grok 4/x",
            vec![
                get("http://h/v1/models", Reader::ModelList),
                get(
                    "http://h/v1/language-models/grok%204%2Fx",
                    Reader::ModelEntry,
                ),
            ],
        ),
    ];
    for (kind, model, expected) in cases {
        assert_eq!(probes(&endpoint(kind), model), expected, "{kind:?}");
    }
}

/// Each answer shape yields the requested model's context length, or nothing.
#[test]
fn answers_read() {
    let cases = [
        (
            "llama.cpp props",
            Reader::LlamaProps,
            json!({"default_generation_settings": {"n_ctx": 8192}}),
            Some(8192),
        ),
        (
            "props without n_ctx",
            Reader::LlamaProps,
            json!({"total_slots": 1}),
            None,
        ),
        (
            "the requested model, not the first listed",
            Reader::ModelList,
            json!({"data": [{"id": "other", "context_length": 1000}, {"id": "m", "context_length": 32768}]}),
            Some(32768),
        ),
        (
            "llama.cpp training length",
            Reader::ModelList,
            json!({"data": [{"id": "m", "meta": {"n_ctx_train": 131072}}]}),
            Some(131072),
        ),
        (
            "vLLM max_model_len",
            Reader::ModelList,
            json!({"data": [{"id": "m", "max_model_len": 4096}]}),
            Some(4096),
        ),
        (
            "openrouter top provider",
            Reader::ModelList,
            json!({"data": [{"id": "m", "top_provider": {"context_length": 200000}}]}),
            Some(200_000),
        ),
        (
            "context_window",
            Reader::ModelList,
            json!({"data": [{"id": "m", "context_window": 256000}]}),
            Some(256_000),
        ),
        (
            "model absent",
            Reader::ModelList,
            json!({"data": [{"id": "x", "context_length": 5}]}),
            None,
        ),
        (
            "not a list",
            Reader::ModelList,
            json!({"error": "nope"}),
            None,
        ),
        (
            "ollama num_ctx wins over training length",
            Reader::OllamaShow,
            json!({"parameters": "stop \"<x>\"\nnum_ctx 8192", "model_info": {"qwen3.context_length": 40960}}),
            Some(8192),
        ),
        (
            "ollama model_info",
            Reader::OllamaShow,
            json!({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}}),
            Some(131072),
        ),
        (
            "ollama without either",
            Reader::OllamaShow,
            json!({"model_info": {}}),
            None,
        ),
        (
            "one model's own entry",
            Reader::ModelEntry,
            json!({"id": "m", "max_context_length": 131072}),
            Some(131072),
        ),
        (
            "zero and negative are unknown",
            Reader::ModelEntry,
            json!({"context_length": 0, "context_window": -5}),
            None,
        ),
    ];
    for (name, reader, body, expected) in cases {
        assert_eq!(reader.context_length(&body, "m"), expected, "{name}");
    }
    let latest = json!({"data": [{"id": "grok-4", "context_window": 256000}, {"id": "grok-3", "aliases": ["grok-3-fast"], "context_length": 131072}]});
    assert_eq!(
        Reader::ModelList.context_length(&latest, "grok-4-latest"),
        Some(256_000)
    );
    assert_eq!(
        Reader::ModelList.context_length(&latest, "grok-3-fast"),
        Some(131_072)
    );
}
