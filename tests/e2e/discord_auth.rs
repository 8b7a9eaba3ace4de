//! The fake Discord refuses a request without the bot's token as Discord
//! does — 401 `{"message": "401: Unauthorized", "code": 0}` and nothing
//! done — so no test can pass on a request Discord would not take.

use serde_json::{Value, json};

use crate::support::fake_discord::{FakeDiscord, GENERAL, bot_http};

#[tokio::test]
async fn a_request_without_the_bots_token_is_refused_and_changes_nothing() {
    let discord = FakeDiscord::start();
    let url = format!("{}/api/v10/channels/{GENERAL}/messages", discord.url);
    let body = json!({"content": "who am I"});
    let anonymous = reqwest::Client::new();
    let asked = [
        ("no Authorization", anonymous.post(&url)),
        (
            "a wrong token",
            anonymous
                .post(&url)
                .header("Authorization", "Bot not-the-token"),
        ),
        (
            "the token without `Bot `",
            anonymous
                .post(&url)
                .header("Authorization", crate::support::fake_discord::TOKEN),
        ),
    ];
    for (what, request) in asked {
        let answer = request.json(&body).send().await.unwrap();
        assert_eq!(answer.status().as_u16(), 401, "{what}");
        let said: Value = answer.json().await.unwrap();
        assert_eq!(
            said,
            json!({"message": "401: Unauthorized", "code": 0}),
            "{what}"
        );
    }
    assert!(
        discord.with(|w| w.posted_in(GENERAL)).is_empty(),
        "a refused request created a message"
    );
    assert!(
        discord.with(|w| w.log_of("MESSAGE_CREATE")).is_empty(),
        "a refused request was echoed on the gateway"
    );

    let taken = bot_http().post(&url).json(&body).send().await.unwrap();
    assert_eq!(taken.status().as_u16(), 200, "the bot's own token is taken");
    assert_eq!(discord.with(|w| w.posted_in(GENERAL)).len(), 1);
}
