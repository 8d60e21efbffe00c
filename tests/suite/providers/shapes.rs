//! What goes over the wire per provider: request bodies and headers (compared whole), answers under each provider's field names, event streams, and context-length discovery.

use super::{answer, Rig};
use pretty_assertions::assert_eq;
use rummy::config::{OllamaConfig, OpenAiConfig, OpenRouterConfig, XaiConfig};
use rummy_actors::provider::ProviderEvent;
use rummy_provider::Completion;
use rummy_provider::Usage;
use rummy_store::models;
use rummy_testkit::{FakeProvider, Reply};
use serde_json::{json, Value};
use std::time::Duration;

/// All four providers configured against one fake server.
async fn every_provider(fake: &FakeProvider) -> Rig {
    every_provider_capped(fake, None).await
}

/// All four providers configured against one fake server, with this `RUMMY_MAX_OUTPUT_TOKENS`.
async fn every_provider_capped(fake: &FakeProvider, max_output_tokens: Option<u32>) -> Rig {
    let base = fake.base_url();
    Rig::start(|c| {
        let p = &mut c.providers;
        p.max_output_tokens = max_output_tokens;
        p.openai = Some(OpenAiConfig {
            base_url: base.clone(),
            api_key: Some("sk-openai".into()),
        });
        p.ollama = Some(OllamaConfig {
            base_url: base.clone(),
        });
        p.openrouter = Some(OpenRouterConfig {
            base_url: base.clone(),
            api_key: Some("sk-or".into()),
            referer: Some("https://example.org/rummy".into()),
            title: Some("rummy tests".into()),
        });
        p.xai = Some(XaiConfig {
            base_url: base.clone(),
            api_key: Some("xai-key".into()),
        })
    })
    .await
}

/// The four providers' aliases, in the order the tests call them.
const MODELS: [(&str, &str); 4] = [
    ("o", "openai/gpt-x"),
    ("l", "ollama/qwen3:8b"),
    ("r", "openrouter/anthropic/claude-3-opus"),
    ("x", "xai/grok-4"),
];

/// Each provider gets its own path, headers and body shape (snapshots compared whole), and its streamed answer is read.
#[actix_rt::test]
async fn request_shapes_per_provider() {
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider(&fake).await;
    let messages = json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say ok."}]);
    let chat = |model: &str| json!({"model": model, "messages": messages, "temperature": 0.5, "stream": true, "stream_options": {"include_usage": true}});
    for (alias, actual) in MODELS {
        fake.push(Reply::content("ok fine").usage(3, 2));
        let model = rig.model(alias, actual, None).await;
        let (result, events) = rig.call(&model).await;
        let wire = model.wire_name();
        assert_eq!(result, Ok(answer("ok fine", wire, 3, 2)), "{alias}");
        assert_eq!(
            events,
            vec![ProviderEvent::Delta("ok fine".into())],
            "{alias}"
        );
    }
    let seen: Vec<(String, [Option<String>; 3], Value)> = fake
        .chat_requests()
        .into_iter()
        .map(|r| {
            let header = |n: &str| r.header(n).map(str::to_owned);
            let headers = [
                header("authorization"),
                header("http-referer"),
                header("x-title"),
            ];
            (r.path.clone(), headers, r.body.clone())
        })
        .collect();
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        seen,
        vec![
            (
                "/v1/chat/completions".into(),
                [some("Bearer sk-openai"), None, None],
                chat("gpt-x")
            ),
            (
                "/v1/chat/completions".into(),
                [None, None, None],
                chat("qwen3:8b")
            ),
            (
                "/chat/completions".into(),
                [
                    some("Bearer sk-or"),
                    some("https://example.org/rummy"),
                    some("rummy tests")
                ],
                chat("anthropic/claude-3-opus"),
            ),
            (
                "/v1/responses".into(),
                [some("Bearer xai-key"), None, None],
                json!({"model": "grok-4", "input": messages, "temperature": 0.5, "stream": true}),
            ),
        ]
    );
}

/// `RUMMY_MAX_OUTPUT_TOKENS` reaches each provider in the one field it reads: OpenAI's
/// `max_completion_tokens`, Ollama's and OpenRouter's `max_tokens`, the Responses API's
/// `max_output_tokens` (unset, `request_shapes_per_provider` shows none is sent).
#[actix_rt::test]
async fn output_cap_goes_in_each_providers_field() {
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider_capped(&fake, Some(256)).await;
    for (alias, actual) in MODELS {
        fake.push(Reply::content("ok"));
        let model = rig.model(alias, actual, None).await;
        let (result, _) = rig.call(&model).await;
        assert_eq!(result.map(|c| c.content), Ok("ok".to_owned()), "{alias}");
    }
    let fields = ["max_tokens", "max_completion_tokens", "max_output_tokens"];
    let sent: Vec<Vec<(&str, Value)>> = fake
        .chat_requests()
        .iter()
        .map(|r| {
            fields
                .iter()
                .filter_map(|f| r.body.get(*f).map(|v| (*f, v.clone())))
                .collect()
        })
        .collect();
    assert_eq!(
        sent,
        vec![
            vec![("max_completion_tokens", json!(256))],
            vec![("max_tokens", json!(256))],
            vec![("max_tokens", json!(256))],
            vec![("max_output_tokens", json!(256))],
        ]
    );
}

/// A server that answers JSON to a streamed request is read whole, under each provider's field names for reasoning, usage and cost.
#[actix_rt::test]
async fn whole_answers_per_provider() {
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider(&fake).await;
    let chat = |message: Value, usage: Value| json!({"model": "served", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage});
    let cases = [
        (
            chat(
                json!({"role": "assistant", "content": "A", "reasoning_content": "llama thinks"}),
                json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 6}}),
            ),
            Completion {
                content: "A".into(),
                reasoning: Some("llama thinks".into()),
                usage: Usage {
                    prompt_tokens: 10,
                    cached_tokens: 6,
                    completion_tokens: 2,
                    reasoning_tokens: 0,
                    total_tokens: 12,
                    cost: 0.0,
                },
                model: Some("served".into()),
            },
        ),
        (
            chat(
                json!({"role": "assistant", "content": "B", "reasoning": "ollama thinks"}),
                json!({"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}),
            ),
            Completion {
                content: "B".into(),
                reasoning: Some("ollama thinks".into()),
                usage: Usage {
                    prompt_tokens: 4,
                    completion_tokens: 1,
                    total_tokens: 5,
                    ..Usage::default()
                },
                model: Some("served".into()),
            },
        ),
        (
            chat(
                json!({"role": "assistant", "content": "C", "reasoning": "plan", "reasoning_details": [{"type": "reasoning.text", "text": "and check"}]}),
                json!({"prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12, "cost": 0.0042,
                       "completion_tokens_details": {"reasoning_tokens": 3}}),
            ),
            Completion {
                content: "C".into(),
                reasoning: Some("plan\nand check".into()),
                usage: Usage {
                    prompt_tokens: 8,
                    cached_tokens: 0,
                    completion_tokens: 4,
                    reasoning_tokens: 3,
                    total_tokens: 12,
                    cost: 0.0042,
                },
                model: Some("served".into()),
            },
        ),
        (
            json!({"model": "grok-4", "status": "completed", "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "grok thinks"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "D"}]}],
                "usage": {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12,
                          "input_tokens_details": {"cached_tokens": 2}, "output_tokens_details": {"reasoning_tokens": 1},
                          "cost_in_usd_ticks": 37_000_000}}),
            Completion {
                content: "D".into(),
                reasoning: Some("grok thinks".into()),
                usage: Usage {
                    prompt_tokens: 9,
                    cached_tokens: 2,
                    completion_tokens: 3,
                    reasoning_tokens: 1,
                    total_tokens: 12,
                    cost: 0.0037,
                },
                model: Some("grok-4".into()),
            },
        ),
    ];
    for ((alias, actual), (body, expected)) in MODELS.into_iter().zip(cases) {
        fake.push(Reply::status(200, body));
        let model = rig.model(alias, actual, None).await;
        assert_eq!(rig.call(&model).await, (Ok(expected), vec![]), "{alias}");
    }
}

/// An event stream split mid-JSON, with keep-alives and malformed lines, still yields every delta (the reasoning before the text) and the final usage.
#[actix_rt::test]
async fn streams_survive_split_chunks_keepalives_and_garbage() {
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider(&fake).await;
    let pieces = [
        ": ping\n\n",
        "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel",
        "lo\"},\"finish_reason\":null}]}\n",
        "\n: ping\n\ndata: {not json}\n\ngarbage without a colon\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"brief\",\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\r\n\r\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    ];
    fake.push(Reply::raw_sse(pieces.map(str::to_owned).to_vec()));
    let model = rig.model("o", "openai/gpt-x", None).await;
    let expected = Completion {
        reasoning: Some("brief".into()),
        ..answer("Hello world", "m", 5, 2)
    };
    let (completion, events) = rig.call(&model).await;
    assert_eq!(completion, Ok(expected));
    // How the deltas are gathered depends on when the chunks arrive; what they carry does not.
    let (mut text, mut reasoning) = (String::new(), String::new());
    for event in &events {
        match event {
            ProviderEvent::Delta(t) => text.push_str(t),
            ProviderEvent::Reasoning(r) => reasoning.push_str(r),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        (text.as_str(), reasoning.as_str()),
        ("Hello world", "brief")
    );
}

/// Text that arrives together goes out as one delta, but a stream that pauses does not hold
/// back what came before the pause: each chunk 100 ms apart is its own delta.
#[actix_rt::test]
async fn a_slow_stream_sends_each_delta_as_it_arrives() {
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider(&fake).await;
    fake.push(
        Reply::content("ok fine")
            .usage(3, 2)
            .chunk_delay(Duration::from_millis(100)),
    );
    let model = rig.model("o", "openai/gpt-x", None).await;
    let (result, events) = rig.call_raw(&model).await;
    assert_eq!(
        (result.map(|c| c.content).map_err(|e| e.to_string()), events),
        (
            Ok("ok fine".to_owned()),
            vec![
                ProviderEvent::Delta("ok ".into()),
                ProviderEvent::Delta("fine".into())
            ]
        )
    );
}

/// Each provider is asked for the requested model's context length its own way, and the answer is cached in `models`.
#[actix_rt::test]
async fn context_length_discovery_per_provider() {
    type Setup = fn(&FakeProvider);
    /// Name, model, fake set-up, expected length, requests made.
    type Case = (
        &'static str,
        &'static str,
        Setup,
        Option<i32>,
        Vec<&'static str>,
    );
    let cases: [Case; 6] = [
        (
            "openai: llama.cpp /props",
            "openai/gpt-x",
            |f| f.set_props(json!({"default_generation_settings": {"n_ctx": 8192}})),
            Some(8192),
            vec!["GET /props"],
        ),
        (
            "openai: the requested model in /v1/models, not the first",
            "openai/gpt-x",
            |f| {
                f.set_models(json!({"data": [{"id": "other", "context_length": 1}, {"id": "gpt-x", "meta": {"n_ctx_train": 16384}}]}))
            },
            Some(16384),
            vec!["GET /props", "GET /v1/models"],
        ),
        (
            "ollama: /api/show",
            "ollama/qwen3:8b",
            |f| {
                f.set_show(json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}))
            },
            Some(40960),
            vec!["POST /api/show"],
        ),
        (
            "openrouter: the catalogue",
            "openrouter/anthropic/claude-3-opus",
            |f| {
                f.set_models(
                    json!({"data": [{"id": "anthropic/claude-3-opus", "context_length": 200000}]}),
                )
            },
            Some(200_000),
            vec!["GET /models"],
        ),
        (
            "xai: the models endpoint",
            "xai/grok-4",
            |f| f.set_models(json!({"data": [{"id": "grok-4", "context_length": 256000}]})),
            Some(256_000),
            vec!["GET /v1/models"],
        ),
        (
            "nobody knows: nothing cached",
            "openai/gpt-x",
            |_| {},
            None,
            vec!["GET /props", "GET /v1/models"],
        ),
    ];
    for (name, actual, setup, expected, asked) in cases {
        let fake = FakeProvider::start().unwrap();
        setup(&fake);
        let rig = every_provider(&fake).await;
        let model = rig.model("m", actual, None).await;
        let found = rig.providers.context_length(&model).await;
        let stored = rig
            .store
            .read(|c| models::by_alias(c, "m"))
            .await
            .unwrap()
            .and_then(|m| m.context_length);
        let requests: Vec<String> = fake
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert_eq!(
            (found, stored, requests),
            (
                expected,
                expected,
                asked.iter().map(|s| s.to_string()).collect()
            ),
            "{name}"
        );
        if actual.starts_with("ollama") {
            assert_eq!(fake.requests()[0].body, json!({"model": "qwen3:8b"}));
        }
    }
    // A known length is answered from the store without asking.
    let fake = FakeProvider::start().unwrap();
    let rig = every_provider(&fake).await;
    let mut model = rig.model("m", "openai/gpt-x", None).await;
    model.context_length = Some(4096);
    assert_eq!(rig.providers.context_length(&model).await, Some(4096));
    assert_eq!(fake.requests().len(), 0);
}
