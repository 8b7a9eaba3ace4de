//! Readable text from an HTML page: the title, and the visible text with
//! scripts, styles and tags removed. Good enough for a model to summarise;
//! not a browser.

/// (title, text) of an HTML document, the text cut to `max_chars`.
pub(crate) fn readable(html: &str, max_chars: usize) -> (Option<String>, String) {
    let title = between_tags(html, "title").map(|t| collapse(&decode_entities(&t)));
    let mut text = String::with_capacity(html.len().min(max_chars * 2));
    let lower = html.to_ascii_lowercase();
    let mut i = 0;
    while i < html.len() {
        if html.as_bytes()[i] == b'<' {
            // Skip the contents of elements that are never shown.
            let skipped = ["script", "style", "noscript", "svg", "head"]
                .iter()
                .find_map(|tag| {
                    let open = format!("<{tag}");
                    let next = lower.as_bytes().get(i + open.len()).copied();
                    (lower[i..].starts_with(&open)
                        && matches!(next, Some(b'>' | b' ' | b'\n' | b'\t' | b'/')))
                    .then(|| lower[i..].find(&format!("</{tag}")).map(|end| i + end))
                    .flatten()
                });
            let from = skipped.unwrap_or(i);
            match html[from..].find('>') {
                Some(end) => {
                    let tag = &lower[from..from + end];
                    if tag.starts_with("<p")
                        || tag.starts_with("<br")
                        || tag.starts_with("<div")
                        || tag.starts_with("<li")
                        || tag.starts_with("<h")
                        || tag.starts_with("</p")
                    {
                        text.push('\n');
                    }
                    i = from + end + 1;
                }
                None => break,
            }
        } else {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            text.push_str(&html[i..next]);
            i = next;
        }
        if text.len() > max_chars * 4 {
            break;
        }
    }
    let text = decode_entities(&text);
    let lines: Vec<String> = text
        .lines()
        .map(collapse)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = lines.join("\n");
    (title, joined.chars().take(max_chars).collect())
}

fn between_tags(html: &str, tag: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find(&format!("<{tag}"))?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find(&format!("</{tag}"))?;
    Some(html[open_end..close].to_string())
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The common named entities and numeric ones.
pub(crate) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let Some(semi) = after[..after.len().min(12)].find(';') else {
            out.push('&');
            rest = &after[1..];
            continue;
        };
        let entity = &after[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            e if e.starts_with("#x") || e.starts_with("#X") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_scripts_styles_or_tags() {
        let html = "<html><head><title>Hello &amp; welcome</title><style>p{}</style></head>\
                    <body><script>var x = '<p>';</script><h1>Big news</h1><p>Rust 2.0 is <b>out</b>&#33;</p></body></html>";
        let (title, text) = readable(html, 1000);
        assert_eq!(title.as_deref(), Some("Hello & welcome"));
        assert_eq!(text, "Big news\nRust 2.0 is out!");
        assert_eq!(readable(html, 5).1, "Big n");
    }
}
