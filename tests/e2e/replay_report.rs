//! What the replay report tells an owner: offline, the models this set-up
//! would really use (a role with none does nothing, and the report says
//! so), costs with a real answer's length (likely and worst case), figures
//! per day people talk, and which limit bound the bot's own posts.

use std::path::Path;

use ambient::replay::export::ExportLimits;
use ambient::replay::run::{Models, Options, Outcome, replay};
use ambient::settings::{Secrets, Settings};

fn sample_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/replay");
    vec![
        root.join("sample-general.json"),
        root.join("sample-links.json"),
    ]
}

/// Settings whose local Ollama is nowhere (a closed port): the operator runs none.
fn no_ollama() -> Settings {
    let mut s = Settings::default();
    s.executive.ollama_base_url = "http://127.0.0.1:9".into();
    s
}

fn anthropic_key_only() -> Secrets {
    Secrets::from_lookup(|k| (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_string()))
}

async fn replayed(settings: Settings, secrets: Secrets, models: Models) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    replay(
        Options {
            files: sample_files(),
            settings,
            secrets,
            data_dir: dir.path().join("data"),
            seed: 1,
            models,
            eagerness: None,
            bot: None,
            limits: ExportLimits::at(chrono::Utc::now()),
        },
        &|_| {},
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn offline_with_only_an_anthropic_key_posts_nothing_on_its_own_and_says_why() {
    let r = replayed(
        no_ollama(),
        anthropic_key_only(),
        Models::Offline { post_rate: 0.3 },
    )
    .await
    .report;
    let text = ambient::replay::text::report(&r);
    // As `ambient status` would show: replies on Anthropic, nothing for the autonomous roles.
    assert_eq!(r.did.ambient_posts, 0, "{text}");
    assert_eq!(r.did.chime_ins, 0, "{text}");
    assert!(r.did.replies > 0, "people are still answered: {text}");
    assert!(!r.run.models_assumed, "{text}");
    assert_eq!(r.run.roles_without_model, ["ambient", "reflex", "extract"]);
    let served: Vec<(&str, &[String])> = r
        .roles
        .iter()
        .map(|row| (row.role.as_str(), row.models.as_slice()))
        .collect();
    assert_eq!(
        served,
        [("reply", &["claude-opus-4-6 (anthropic)".to_string()][..])],
        "no call on a model this set-up does not have: {text}"
    );
    assert!(
        text.contains("No model for the ambient, reflex and extract roles (")
            && text.contains("executive.allowPayPerTokenForAutonomous")
            && text.contains("so the bot would not post on its own, chime in or tend its garden"),
        "{text}"
    );
    assert!(!text.contains("ollama"), "{text}");
}

#[tokio::test]
async fn assumed_providers_are_a_what_if_labelled_as_such() {
    let r = replayed(
        no_ollama(),
        anthropic_key_only(),
        Models::Assumed { post_rate: 0.3 },
    )
    .await
    .report;
    let text = ambient::replay::text::report(&r);
    assert!(r.did.ambient_posts > 0, "{text}");
    assert!(r.run.models_assumed && r.run.models_assumed_on_request);
    assert!(r.run.roles_without_model.is_empty(), "{text}");
    assert!(
        text.contains("Models: offline, assumed providers (placeholder answers")
            && text.contains(
                "Assumed providers (--assume-providers): an Anthropic key for replies and a local \
                 Ollama for the rest, whatever this set-up has. A what-if, not what your bot would do."
            ),
        "{text}"
    );
}

#[tokio::test]
async fn the_report_gives_per_active_day_figures_likely_and_worst_cost_and_the_binding_cap() {
    let mut settings = no_ollama();
    settings.initiative.text.eagerness = 100;
    let outcome = replayed(
        settings,
        Secrets::default(),
        Models::Offline { post_rate: 1.0 },
    )
    .await;
    let r = &outcome.report;
    let text = ambient::replay::text::report(r);

    // Per day people talk: the sample's five days all have people in them.
    assert_eq!(r.active_days, 5, "{text}");
    assert!(
        text.contains("What the bot did        total   per day   per active day")
            && text.contains(
                "(active days: the 5 dates on which people spoke; the export spans 4.6 days)"
            ),
        "{text}"
    );
    let posts = r.did.ambient_posts;
    assert!(posts > 0);
    assert!(
        text.contains(&format!(
            "  ambient posts        {posts:>6}  {:>8.1}  {:>15.1}",
            posts as f64 / r.run.days,
            posts as f64 / 5.0
        )),
        "{text}"
    );

    // Costs priced with a real answer's length, not the placeholder's few tokens.
    let reply = r.roles.iter().find(|row| row.role == "reply").unwrap();
    assert!(
        reply.output_tokens < 10 * reply.calls,
        "placeholders are short"
    );
    assert_eq!(reply.likely_output_tokens, 180 * reply.calls);
    assert_eq!(reply.worst_output_tokens, 1024 * reply.calls);
    let (likely, worst) = (
        r.likely_cost_per_day.unwrap(),
        r.worst_cost_per_day.unwrap(),
    );
    assert!(likely > r.cost_per_day.unwrap() && worst > likely, "{text}");
    let money = |v| ambient::replay::text::money(Some(v));
    assert!(
        text.contains(&format!(
            "Estimated cost per day: likely {}, worst case {}; per active day: likely {}, worst case {}.",
            money(likely),
            money(worst),
            money(r.likely_cost_per_active_day.unwrap()),
            money(r.worst_cost_per_active_day.unwrap())
        )),
        "{text}"
    );

    // Eager, on a busy sample: the daily cap is what stops it.
    assert_eq!(
        r.binding_limits[0], "initiative.text.maxPostsPerDay",
        "{text}"
    );
    assert!(
        text.contains("Limits that bound its own posts: initiative.text.maxPostsPerDay"),
        "{text}"
    );
    // The page's tables carry the same figures.
    let page = ambient::replay::html::page(r, &outcome.timeline);
    assert!(
        page.contains("per active day (5 dates on which people spoke)")
            && page.contains("<td colspan=\"2\">initiative.text.maxPostsPerDay"),
        "{page}"
    );
    let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
    for key in [
        "active_days",
        "likely_cost_per_day",
        "worst_cost_per_day",
        "likely_cost_per_active_day",
        "worst_cost_per_active_day",
        "binding_limits",
    ] {
        assert!(!json[key].is_null(), "{key} in the JSON");
    }
}

/// People refused by `permissions.roles` are counted as the `roles` gate. An
/// export carries no roles, so with any named, nobody who addresses the bot
/// is answered — the report says how often.
#[tokio::test]
async fn the_report_counts_people_the_roles_gate_refused() {
    let open = replayed(
        no_ollama(),
        Secrets::default(),
        Models::Offline { post_rate: 0.0 },
    )
    .await
    .report;
    assert_eq!(open.gates.get("roles"), None, "{:?}", open.gates);
    let mut members_only = no_ollama();
    members_only.permissions.roles.allowed = vec![ambient::ids::RoleId(7001)];
    let r = replayed(
        members_only,
        Secrets::default(),
        Models::Offline { post_rate: 0.0 },
    )
    .await
    .report;
    let refused = r.gates.get("roles").copied().unwrap_or(0);
    assert!(refused > 0, "{:?}", r.gates);
    let text = ambient::replay::text::report(&r);
    assert!(text.contains("roles"), "{text}");
}
