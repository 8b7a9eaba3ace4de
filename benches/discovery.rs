//! Parsing and de-duplicating feed items: 10,000 RSS items (a fifth of them
//! repeats of others under tracking-parameter variants of the same URL),
//! parsed with feed-rs, keyed, and stored with the de-duplication checks
//! against an in-memory store — the work one big fetch costs.
//!
//! `cargo bench --bench discovery`; items/s = 10,000 / the median time.

use ambient::discovery::{keyed, parse};
use ambient::store::Store;
use chrono::Utc;

fn main() {
    divan::main();
}

const ITEMS: usize = 10_000;

fn feed() -> String {
    let mut xml =
        String::from(r#"<?xml version="1.0"?><rss version="2.0"><channel><title>bench</title>"#);
    for i in 0..ITEMS {
        // Every fifth item repeats an earlier story with a tracking parameter.
        let (n, query) = if i % 5 == 4 {
            (i - 1, "?utm_source=rss")
        } else {
            (i, "")
        };
        xml.push_str(&format!(
            "<item><title>Story number {n} about crates and compilers</title>\
             <link>https://news.example/story/{n}{query}</link>\
             <description>&lt;p&gt;Some &lt;b&gt;HTML&lt;/b&gt; summary for story {n}.&lt;/p&gt;</description>\
             <pubDate>Mon, 05 Jan 2026 10:00:00 GMT</pubDate></item>"
        ));
    }
    xml.push_str("</channel></rss>");
    xml
}

#[divan::bench(sample_count = 10)]
fn parse_only(bencher: divan::Bencher) {
    let xml = feed();
    bencher.bench(|| parse::feed(divan::black_box(xml.as_bytes())).unwrap().len());
}

#[divan::bench(sample_count = 10)]
fn parse_key_and_deduplicate(bencher: divan::Bencher) {
    let xml = feed();
    bencher
        .with_inputs(|| Store::open_in_memory().unwrap())
        .bench_values(|store| {
            let now = Utc::now();
            let items: Vec<_> = parse::feed(xml.as_bytes())
                .unwrap()
                .into_iter()
                .map(keyed)
                .collect();
            let source = store
                .discovery()
                .upsert_source("rss", "https://news.example/feed")
                .unwrap();
            let (stored, dupes) = store
                .discovery()
                .insert_feed_items(source, &items, now, now - chrono::Duration::hours(168))
                .unwrap();
            assert_eq!(stored + dupes, ITEMS);
            assert_eq!(dupes, ITEMS / 5);
            stored
        });
}
