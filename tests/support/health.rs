//! The bot's health endpoints (`metrics.bind`) as a test reaches them:
//! where the bot says it serves them, and a plain HTTP/1.1 GET over
//! 127.0.0.1 that reads the status and body as they came.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::bot::Bot;

/// Where the bot says it serves the endpoints (its log line at start).
pub fn endpoints_of(bot: &Bot) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = bot.log();
        if let Some(at) = log.find("and /readyz on http://") {
            let rest = &log[at + "and /readyz on http://".len()..];
            let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
            return rest[..end].to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no metrics address in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `GET path` on `addr`: the status and the body.
pub fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().expect("a status line");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

/// Waits (bounded) until `GET path` answers `status`; the last body.
pub fn wait_status(addr: &str, path: &str, status: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (got, body) = get(addr, path);
        if got == status {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} stayed {got} ({body:?}), not {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
