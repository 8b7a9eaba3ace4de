//! Server-sent events: the `text/event-stream` framing both providers
//! stream in (the WHATWG "event stream" format): lines of `field: value`,
//! an event ended by a blank line, `data` lines joined with newlines,
//! `event` naming it, lines starting with `:` comments (keep-alives).
//!
//! Hand-written rather than taken from `eventsource-stream` (0.2.3): that
//! crate moves the rest of its buffer after every line it reads, so a read
//! of many events costs time quadratic in the read's size, and a provider
//! decides how much arrives in one read. Here every byte is looked at once:
//! bytes wait only until their line ends.

/// One event: its name (`message` when unnamed) and its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub event: String,
    pub data: String,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the stream is not UTF-8")]
pub(crate) struct NotText {
    pub line: u64,
}

#[derive(Default)]
pub(crate) struct Parser {
    /// Bytes of a line not yet ended.
    pending: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    lines: u64,
}

impl Parser {
    /// Takes the next bytes of the stream; returns the events they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<Event>, NotText> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            // The line's start may have come in an earlier chunk.
            let mut line = std::mem::take(&mut self.pending);
            line.extend_from_slice(&rest[..end]);
            let bytes = line.strip_suffix(b"\r").unwrap_or(&line);
            self.lines += 1;
            let text = std::str::from_utf8(bytes).map_err(|_| NotText { line: self.lines })?;
            if let Some(event) = self.line(text) {
                events.push(event);
            }
            line.clear();
            self.pending = line;
            rest = &rest[end + 1..];
        }
        self.pending.extend_from_slice(rest);
        Ok(events)
    }

    /// Bytes held for a line that has not ended yet.
    #[cfg(test)]
    pub(crate) fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let name = std::mem::take(&mut self.event);
            if !std::mem::take(&mut self.has_data) {
                return None;
            }
            let mut data = std::mem::take(&mut self.data);
            data.pop(); // the newline after the last data line
            let event = if name.is_empty() {
                "message".into()
            } else {
                name
            };
            return Some(Event { event, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            // `id` and `retry` matter to a browser reconnecting, not to one request.
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_anywhere_across_chunks_come_out_whole() {
        let stream = "event: ping\ndata: {}\n\n: keep-alive\r\nevent: delta\r\ndata: {\"text\": \"h\u{e9}\"}\r\n\r\ndata: a\ndata:b\n\n";
        let bytes = stream.as_bytes();
        for size in [1, 2, 3, 7, bytes.len()] {
            let mut p = Parser::default();
            let mut got = Vec::new();
            for chunk in bytes.chunks(size) {
                got.extend(p.push(chunk).unwrap());
            }
            assert_eq!(
                got,
                vec![
                    ev("ping", "{}"),
                    ev("delta", "{\"text\": \"h\u{e9}\"}"),
                    ev("message", "a\nb")
                ],
                "chunks of {size}"
            );
            assert_eq!(p.pending_bytes(), 0);
        }
    }

    #[test]
    fn an_event_without_data_is_not_sent_and_bad_bytes_name_their_line() {
        let mut p = Parser::default();
        assert_eq!(p.push(b"event: nothing\n\n").unwrap(), vec![]);
        assert_eq!(p.push(b"data: x\n\xff\xfe\n"), Err(NotText { line: 4 }));
    }

    #[test]
    fn a_megabyte_in_one_chunk_or_in_many_gives_every_event() {
        let one = "data: {\"choices\": []}\n\n";
        let big = one.repeat(40_000);
        let mut p = Parser::default();
        assert_eq!(p.push(big.as_bytes()).unwrap().len(), 40_000);
        let mut p = Parser::default();
        let n: usize = big
            .as_bytes()
            .chunks(1000)
            .map(|c| p.push(c).unwrap().len())
            .sum();
        assert_eq!(n, 40_000);
    }
}
