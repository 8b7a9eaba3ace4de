//! Issue 35, inputs and secrets: IPv6 forms of private addresses — each as
//! a person would find it: what the bot fetched.

use serde_json::json;

use crate::support::home::Home;

/// IPv6 literals that are someone's own network, one of each form.
const PRIVATE_LITERALS: &[&str] = &[
    "fec0::1",
    "::ffff:0:10.0.0.1",
    "64:ff9b:1::a00:1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",
    "2001:0:a00:1::",
    "2002:a00:1::1",
    "64:ff9b::10.0.0.1",
];

#[test]
fn the_fetcher_refuses_a_url_with_a_private_ipv6_form_before_connecting() {
    let home = Home::new(json!({}));
    let mut not_refused = Vec::new();
    for ip in PRIVATE_LITERALS {
        let url = format!("http://[{ip}]/feed.xml");
        let out = home.run(&["discovery", "fetch", &url]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url} was fetched");
        if !stderr.contains("is a private address (network.allowPrivateHosts is off)") {
            not_refused.push(stderr.trim().to_string());
        }
    }
    assert_eq!(not_refused, Vec::<String>::new());
}
