//! Parsing a model reply: a ~10 KB reply with 12 commands (target ≤ 100 µs median), plus the dialect and spotter paths, and the time per byte of replies of one repeated unit (linear: the same at 64 KiB and 4 MiB).

use std::hint::black_box;
use std::process::ExitCode;

use rummy_bench::{report, sample};
use rummy_text::parse::{looks_like_tool_call, parse_reply};

/// Commands each bench reply holds.
const COMMANDS: usize = 12;

/// A multi-line source body, the bulk of a realistic reply.
fn source_body(n: usize) -> String {
    (0..24)
        .map(|line| {
            format!(
                "    let value_{line} = compute(&config.section_{n}, {line}) && flag < limit; // step {line}\n"
            )
        })
        .collect()
}

/// A reply of prose, 5 multi-line sets, 5 gets, a known write and an update.
fn xml_reply() -> String {
    let mut out = String::from("I'll read the modules first, then rewrite what is wrong.\n\n");
    for n in 0..5 {
        out.push_str(&format!(
            "<get path=\"src/module_{n}.rs\" line=\"1\" limit=\"80\"/>\n"
        ));
        out.push_str("The loop below has an off-by-one; here is the corrected file:\n");
        out.push_str(&format!(
            "<set path=\"src/module_{n}.rs\">\nfn run() {{\n{}}}\n</set>\n\n",
            source_body(n)
        ));
    }
    out.push_str("<set path=\"known://modules\" summary=\"modules,loops\">All five modules share the loop helper.</set>\n");
    out.push_str("<update status=\"102\">Rewrote the five modules; checking them next.</update>\n");
    out
}

/// The same amount of work written as native calls (Qwen, OpenAI JSON, Mistral).
fn dialect_reply() -> String {
    let mut out = String::from("Reading and rewriting.\n");
    for n in 0..4 {
        let body = source_body(n)
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        out.push_str(&format!(
            "<|tool_call>call:get{{path:<|\"|>src/m{n}.rs<|\"|>, line:1}}<tool_call|>\n"
        ));
        out.push_str(&format!(
            "{{\"name\": \"set\", \"arguments\": {{\"path\": \"src/m{n}.rs\", \"content\": \"{body}\"}}}}\n"
        ));
        out.push_str(&format!(
            "[TOOL_CALLS] [{{\"name\": \"search\", \"arguments\": {{\"query\": \"loop helper {n}\"}}}}]\n"
        ));
    }
    out
}

fn main() -> ExitCode {
    let xml = xml_reply();
    let dialects = dialect_reply();
    for (name, reply) in [("xml", &xml), ("dialects", &dialects)] {
        let found = parse_reply(reply, 99).commands.len();
        if found != COMMANDS {
            eprintln!("{name} reply gives {found} commands, expected {COMMANDS}");
            return ExitCode::FAILURE;
        }
    }
    let prose = "The answer is that the loop helper is shared; see `<get/>` docs. ".repeat(150);
    println!(
        "replies: xml {} bytes, dialects {} bytes, prose {} bytes; {COMMANDS} commands each",
        xml.len(),
        dialects.len(),
        prose.len()
    );
    let times = sample(200, 3_000, || {
        black_box(parse_reply(black_box(&xml), 99));
    });
    report(
        "parse_reply: 10 KB, 12 XML commands",
        &times,
        "≤ 100 µs median",
    );
    let times = sample(200, 3_000, || {
        black_box(parse_reply(black_box(&dialects), 99));
    });
    report(
        "parse_reply: 12 native/JSON/Mistral calls",
        &times,
        "≤ 100 µs median",
    );
    let times = sample(200, 3_000, || {
        black_box(looks_like_tool_call(black_box(&prose)));
    });
    report(
        "looks_like_tool_call: 10 KB prose",
        &times,
        "≤ 100 µs median",
    );
    // Replies of one repeated unit that once made the parser rescan the rest of the reply
    // per occurrence: the time per byte must not grow with the size.
    for unit in ["```get", "<![CDATA[", "<!--", "<?x "] {
        for bytes in [64 * 1024, 4 * 1024 * 1024] {
            let text = unit.repeat(bytes / unit.len());
            let times = sample(1, 5, || {
                black_box(parse_reply(black_box(&text), 15));
            });
            let median = times[times.len() / 2];
            println!(
                "parse_reply: {unit:<10} × {:>7} ({:>4} KiB)        {:>8.2} ns/byte (median of 5)",
                text.len() / unit.len(),
                bytes / 1024,
                median.as_nanos() as f64 / text.len() as f64
            );
        }
    }
    ExitCode::SUCCESS
}
