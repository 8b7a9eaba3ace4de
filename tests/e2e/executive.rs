//! The executive against the scripted model server: tool loop, retries,
//! budgets, failures, on the manual clock, through the real HTTP client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ambient::clock::Clock;
use ambient::executive::tools::{FinalTool, ToolError, TypedTool, typed};
use ambient::executive::{
    CallContext, ChatRequest, ExecError, Message, ToolChoice, Turn, TurnOutcome,
};
use ambient::ids::GuildId;
use ambient::settings::Role;
use ambient::store::usage::UsageFilter;
use ambient::vocab::journal::{Filter, Kind};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::exec::{self, base_settings};
use crate::support::model_server::Scripted;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WeatherArgs {
    /// The city to look up.
    city: String,
}

struct Weather {
    runs: Arc<AtomicU32>,
}

#[async_trait]
impl TypedTool for Weather {
    type Args = WeatherArgs;
    fn name(&self) -> &'static str {
        "weather"
    }
    fn description(&self) -> String {
        "Current weather in a city".into()
    }
    async fn run(&self, args: WeatherArgs) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(format!("rain in {}", args.city))
    }
}

fn weather_turn(runs: &Arc<AtomicU32>) -> Turn {
    let mut turn = Turn::new(Role::Reply, Some(GuildId(7)), "test turn");
    turn.system = "You are a test.".into();
    turn.messages = vec![Message::user("weather in Oslo?")];
    turn.tools = vec![typed(Weather { runs: runs.clone() })];
    turn
}

fn tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_tool_call_round_trip_openai() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::tool("weather", json!({"city": "Oslo"})))
        .push(Scripted::text("It is raining in Oslo."));
    let runs = Arc::new(AtomicU32::new(0));
    let result = f.exec.run_turn(weather_turn(&runs)).await;

    assert_eq!(
        result.outcome.unwrap(),
        TurnOutcome::Answer("It is raining in Oslo.".into())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        reqs[0].body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(
        reqs[0].headers["authorization"],
        "Bearer sk-test-key-123456"
    );
    let results = tool_results(&reqs[1].body);
    assert_eq!(results[0]["content"], "rain in Oslo");
    assert_eq!(
        results[0]["tool_call_id"],
        reqs[1].body["messages"][2]["tool_calls"][0]["id"]
    );
    assert_eq!(result.tool_calls, 1);
    assert_eq!(result.steps, 2);
}

#[tokio::test]
async fn a_tool_call_round_trip_anthropic() {
    let f = exec::anthropic(base_settings()).await;
    f.server
        .push(Scripted::tool("weather", json!({"city": "Bergen"})))
        .push(Scripted::text("Wet, as usual."));
    let runs = Arc::new(AtomicU32::new(0));
    let result = f.exec.run_turn(weather_turn(&runs)).await;
    assert_eq!(
        result.outcome.unwrap(),
        TurnOutcome::Answer("Wet, as usual.".into())
    );
    let reqs = f.server.requests();
    assert!(reqs[0].path.ends_with("/v1/messages"));
    assert_eq!(reqs[0].headers["x-api-key"], "sk-ant-test-123456");
    assert_eq!(reqs[0].headers["anthropic-version"], "2023-06-01");
    assert_eq!(reqs[0].body["system"], "You are a test.");
    let result_block = &reqs[1].body["messages"][2]["content"][0];
    assert_eq!(result_block["type"], "tool_result");
    assert_eq!(result_block["content"], "rain in Bergen");
    assert_eq!(result_block["is_error"], false);
}

#[tokio::test]
async fn an_invalid_tool_argument_goes_back_to_the_model_and_the_tool_never_runs() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::tool("weather", json!({"town": "Oslo"})))
        .push(Scripted::RawToolCall {
            name: "weather".into(),
            arguments: "{city: Oslo".into(),
        })
        .push(Scripted::tool("forecast", json!({})))
        .push(Scripted::text("Sorry, I could not look it up."));
    let runs = Arc::new(AtomicU32::new(0));
    let result = f.exec.run_turn(weather_turn(&runs)).await;
    assert_eq!(
        result.outcome.unwrap(),
        TurnOutcome::Answer("Sorry, I could not look it up.".into())
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool never ran on bad arguments"
    );
    let reqs = f.server.requests();
    let first = tool_results(&reqs[1].body)[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first.starts_with("Error: ") && first.contains("unknown field `town`"),
        "{first}"
    );
    let second = tool_results(&reqs[2].body)[1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(second.contains("not valid JSON"), "{second}");
    let third = tool_results(&reqs[3].body)[2]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(third.contains("no tool named \"forecast\""), "{third}");
}

#[tokio::test]
async fn the_step_cap_ends_a_loop_that_never_answers() {
    let f = exec::openai(base_settings()).await;
    f.server
        .fallback(Scripted::tool("weather", json!({"city": "Oslo"})));
    let runs = Arc::new(AtomicU32::new(0));
    let mut turn = weather_turn(&runs);
    turn.max_steps = 3;
    let result = f.exec.run_turn(turn).await;
    match result.outcome.unwrap() {
        TurnOutcome::Incomplete(why) => assert!(why.contains("step cap (3)"), "{why}"),
        other => panic!("expected incomplete, got {other:?}"),
    }
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 3, "exactly max_steps model calls");
    assert!(
        reqs[2].body.get("tools").is_none(),
        "the last step withdraws the tools"
    );
    let journaled = f
        .journal
        .query(&Filter {
            kinds: vec![Kind::Outcome],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(journaled.len(), 1);
    assert!(
        journaled[0].summary.contains("turn incomplete")
            && journaled[0].reason.contains("step cap")
    );
}

#[tokio::test]
async fn the_tool_call_cap_withdraws_tools_and_forces_an_answer() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::Tools(vec![
            ("weather".into(), json!({"city": "A"})),
            ("weather".into(), json!({"city": "B"})),
        ]))
        .push(Scripted::text("A and B are wet."));
    let runs = Arc::new(AtomicU32::new(0));
    let mut turn = weather_turn(&runs);
    turn.max_calls = 1;
    let result = f.exec.run_turn(turn).await;
    assert_eq!(
        result.outcome.unwrap(),
        TurnOutcome::Answer("A and B are wet.".into())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let reqs = f.server.requests();
    let results = tool_results(&reqs[1].body);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("tool budget")
    );
    assert!(reqs[1].body.get("tools").is_none());
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Decision {
    action: String,
}

#[tokio::test]
async fn a_missing_final_call_gets_one_continuation_then_ends_incomplete() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::text("hmm"))
        .push(Scripted::text("still thinking"));
    let mut turn = Turn::new(Role::Ambient, Some(GuildId(1)), "decision");
    turn.messages = vec![Message::user("decide")];
    turn.final_tool = Some(FinalTool::of::<Decision>("decide", "Your decision"));
    turn.continuation = Some("You stopped unexpectedly without calling decide.".into());
    let result = f.exec.run_turn(turn).await;
    match result.outcome.unwrap() {
        TurnOutcome::Incomplete(why) => assert!(
            why.contains("stopped twice without calling decide"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 2);
    let last_user = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last_user["content"],
        "You stopped unexpectedly without calling decide."
    );
    assert_eq!(
        f.journal
            .query(&Filter {
                kinds: vec![Kind::Outcome],
                ..Default::default()
            })
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_valid_final_call_ends_the_turn_with_its_value_and_a_bad_one_is_returned() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::tool("decide", json!({"verb": "post"})))
        .push(Scripted::tool("decide", json!({"action": "post"})));
    let mut turn = Turn::new(Role::Ambient, Some(GuildId(1)), "decision");
    turn.messages = vec![Message::user("decide")];
    turn.final_tool = Some(FinalTool::of::<Decision>("decide", "Your decision"));
    let result = f.exec.run_turn(turn).await;
    assert_eq!(
        result.outcome.unwrap(),
        TurnOutcome::Final(json!({"action": "post"}))
    );
    let reqs = f.server.requests();
    assert!(
        tool_results(&reqs[1].body)[0]["content"]
            .as_str()
            .unwrap()
            .contains("missing field `action`")
    );
}

fn simple_request() -> ChatRequest {
    ChatRequest {
        system: "s".into(),
        messages: vec![Message::user("hi")],
        tools: vec![],
        tool_choice: ToolChoice::Auto,
        max_tokens: 64,
    }
}

#[tokio::test]
async fn a_429_with_retry_after_waits_that_long_then_succeeds() {
    let f = exec::openai(base_settings()).await;
    f.server
        .push(Scripted::status_with(
            429,
            r#"{"error": {"message": "slow down"}}"#,
            &[("retry-after", "2")],
        ))
        .push(Scripted::text("ok now"));
    let before = f.clock.now();
    let done = f
        .exec
        .complete(&CallContext::new(Role::Reply, None), &simple_request())
        .await
        .unwrap();
    assert_eq!(done.response.text(), "ok now");
    assert_eq!(f.clock.slept(), vec![Duration::from_secs(2)]);
    assert_eq!(f.clock.now() - before, chrono::Duration::seconds(2));
    let records = f
        .store
        .usage()
        .usage_list(&UsageFilter::default(), None)
        .unwrap();
    let outcomes: Vec<&str> = records.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["rate_limited", "ok"]);
    assert!(records[0].detail.contains("slow down"));
    assert_eq!(records[1].tokens_in, 120);
    assert_eq!(records[1].tokens_out, 30);
    let states = f.exec.provider_states();
    assert!(states[0].1.last_rate_limited.is_some());
}

#[tokio::test]
async fn server_errors_and_a_hung_response_are_retried_with_backoff() {
    let mut settings = base_settings();
    settings.executive.request_timeout_seconds = 1;
    let f = exec::openai(settings).await;
    f.server
        .push(Scripted::status(500, "boom"))
        .push(Scripted::Hang)
        .push(Scripted::text("finally"));
    let done = f
        .exec
        .complete(&CallContext::new(Role::Reply, None), &simple_request())
        .await
        .unwrap();
    assert_eq!(done.response.text(), "finally");
    let slept = f.clock.slept();
    assert_eq!(slept.len(), 2);
    assert!(
        slept[0] >= Duration::from_secs(1) && slept[0] <= Duration::from_millis(1500),
        "{slept:?}"
    );
    assert!(
        slept[1] >= Duration::from_secs(2) && slept[1] <= Duration::from_secs(3),
        "{slept:?}"
    );
    let outcomes: Vec<String> = f
        .store
        .usage()
        .usage_list(&UsageFilter::default(), None)
        .unwrap()
        .into_iter()
        .map(|r| r.outcome)
        .collect();
    assert_eq!(outcomes, vec!["server_error", "timeout", "ok"]);
}

#[tokio::test]
async fn a_malformed_body_is_a_recorded_failure_not_a_panic() {
    let f = exec::openai(base_settings()).await;
    f.server.push(Scripted::Malformed);
    let err = f
        .exec
        .complete(&CallContext::new(Role::Reply, None), &simple_request())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Provider { .. }), "{err}");
    assert!(err.to_string().contains("not JSON"), "{err}");
    let records = f
        .store
        .usage()
        .usage_list(&UsageFilter::default(), None)
        .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, "malformed");
    assert_eq!(
        f.server.requests().len(),
        1,
        "a malformed answer is not retried"
    );
}

#[tokio::test]
async fn a_call_over_the_daily_cap_is_refused_without_any_request() {
    let mut settings = base_settings();
    settings.budget.daily_tokens.reply = 100;
    let f = exec::openai(settings).await;
    f.server.fallback(Scripted::text("should never be asked"));
    let request = ChatRequest {
        max_tokens: 200,
        ..simple_request()
    };
    let err = f
        .exec
        .complete(&CallContext::new(Role::Reply, Some(GuildId(3))), &request)
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::OverBudget(_)), "{err}");
    assert!(
        err.to_string().contains("budget.dailyTokens.reply"),
        "{err}"
    );
    assert!(f.server.requests().is_empty(), "no HTTP request was made");
    let records = f
        .store
        .usage()
        .usage_list(&UsageFilter::default(), None)
        .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, "refused");
}

#[tokio::test]
async fn autonomous_work_of_one_guild_is_capped() {
    let mut settings = base_settings();
    settings.budget.guild_autonomous_daily_tokens = 1_000;
    let f = exec::openai(settings).await;
    f.server.fallback(Scripted::Text {
        text: "done".into(),
        tokens_in: 900,
        tokens_out: 100,
    });
    let ctx = CallContext::new(Role::Ambient, Some(GuildId(5)));
    f.exec.complete(&ctx, &simple_request()).await.unwrap();
    let err = f.exec.complete(&ctx, &simple_request()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("budget.guildAutonomousDailyTokens"),
        "{err}"
    );
    // Another guild is unaffected.
    f.exec
        .complete(
            &CallContext::new(Role::Ambient, Some(GuildId(6))),
            &simple_request(),
        )
        .await
        .unwrap();
    assert_eq!(f.server.requests().len(), 2);
}

#[tokio::test]
async fn a_provider_failing_repeatedly_is_skipped_for_a_while() {
    let mut settings = base_settings();
    settings.executive.failure_threshold = 2;
    settings.executive.max_retries = 0;
    settings.executive.provider_cooldown_minutes = 5;
    let f = exec::openai(settings).await;
    f.server.fallback(Scripted::status(
        401,
        r#"{"error": {"message": "bad key"}}"#,
    ));
    let ctx = CallContext::new(Role::Reply, None);
    for _ in 0..2 {
        f.exec.complete(&ctx, &simple_request()).await.unwrap_err();
    }
    let err = f.exec.complete(&ctx, &simple_request()).await.unwrap_err();
    assert!(
        err.to_string().contains("skipped after repeated failures"),
        "{err}"
    );
    assert_eq!(
        f.server.requests().len(),
        2,
        "the cooling provider was not called"
    );
    f.clock.advance(chrono::Duration::minutes(6));
    f.exec.complete(&ctx, &simple_request()).await.unwrap_err();
    assert_eq!(
        f.server.requests().len(),
        3,
        "tried again after the cooldown"
    );
}

#[tokio::test]
async fn rate_limit_headers_are_kept_per_provider() {
    let f = exec::openai(base_settings()).await;
    f.server
        .success_headers(&[
            ("x-ratelimit-limit-tokens", "100000"),
            ("x-ratelimit-remaining-tokens", "85000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ])
        .push(Scripted::text("hi"));
    f.exec
        .complete(&CallContext::new(Role::Reply, None), &simple_request())
        .await
        .unwrap();
    let states = f.exec.provider_states();
    let limits = states[0].1.limits.clone().unwrap();
    assert_eq!(limits.tokens_remaining, Some(85_000));
    assert_eq!(
        limits.tokens_reset,
        Some(f.clock.now() + chrono::Duration::minutes(6))
    );
}

#[tokio::test]
async fn a_reachable_ollama_serves_the_cheap_roles_for_free() {
    use crate::support::model_server::ModelServer;
    let server = ModelServer::start();
    let mut settings = base_settings();
    settings.executive.ollama_base_url = server.url.clone();
    let f = exec::build(settings, server, &[]).await;
    let reflex = f.exec.resolve(Role::Reflex);
    assert_eq!(reflex.endpoints.len(), 1);
    assert_eq!(reflex.endpoints[0].model, "qwen2.5:14b");
    assert!(!reflex.endpoints[0].pay_per_token);
    f.server.push(Scripted::text("yes"));
    let done = f
        .exec
        .complete(&CallContext::new(Role::Reflex, None), &simple_request())
        .await
        .unwrap();
    assert_eq!(done.response.text(), "yes");
    assert_eq!(f.server.requests()[0].path, "/v1/chat/completions");
    assert!(
        f.exec.unavailable(Role::Reply).is_none(),
        "with nothing else, Ollama answers people too"
    );
}

#[tokio::test]
async fn the_snapshot_reports_user_rate_and_ambient_share() {
    use ambient::store::usage::UsageRecord;
    let f = exec::openai(base_settings()).await;
    let now = f.clock.now();
    let record =
        |minutes_ago: i64, source: &str, role: &str, tokens: u64, outcome: &str| UsageRecord {
            id: 0,
            at: now - chrono::Duration::minutes(minutes_ago),
            role: role.into(),
            source: source.into(),
            guild: None,
            provider: "openai".into(),
            model: "m".into(),
            pay_per_token: false,
            tokens_in: tokens,
            tokens_out: 0,
            latency_ms: 10,
            outcome: outcome.into(),
            detail: String::new(),
        };
    f.store
        .usage()
        .usage_append(&record(10, "user", "reply", 6_000, "ok"))
        .unwrap();
    f.store
        .usage()
        .usage_append(&record(120, "user", "reply", 3_000, "ok"))
        .unwrap();
    f.store
        .usage()
        .usage_append(&record(30, "ambient", "ambient", 1_000, "ok"))
        .unwrap();
    f.store
        .usage()
        .usage_append(&record(5, "ambient", "ambient", 0, "rate_limited"))
        .unwrap();
    f.store
        .usage()
        .usage_append(&record(60 * 30, "user", "reply", 99_999, "ok"))
        .unwrap();
    let s = f.exec.snapshot();
    assert_eq!(s.user_tokens_last_hour, 6_000);
    assert_eq!(s.user_tokens_per_minute, 100.0);
    assert_eq!(s.user_tokens_24h, 9_000);
    assert_eq!(s.ambient_tokens_24h, 1_000);
    assert!((s.ambient_share - 0.1).abs() < 1e-9);
    assert_eq!(s.rate_limited_last_hour, 1);
    assert_eq!(s.ambient_budget_remaining, Some(199_000));
}
