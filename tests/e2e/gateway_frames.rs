//! A gateway frame is read only up to a size: a gateway whose frame header
//! declares more than `vendor/serenity`'s limit (64 MiB, tungstenite's own
//! default for a message) gets the connection closed, and the bot connects
//! again, where it would otherwise set aside the declared length before a
//! byte of it arrived.
//!
//! The fake gateway here is a raw socket: a WebSocket library will not send
//! a header that lies about its length.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;
use sha1::{Digest, Sha1};

use crate::support::bot::Bot;
use crate::support::fake_discord::FakeDiscord;

/// Completes the client's WebSocket handshake on `tcp` (RFC 6455, 4.2.2).
fn accept(tcp: &mut TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(tcp.try_clone()?);
    let mut key = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("sec-websocket-key")
        {
            key = value.trim().to_string();
        }
    }
    let digest = Sha1::digest(format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11"));
    let accept = base64::engine::general_purpose::STANDARD.encode(digest);
    write!(
        tcp,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )
}

/// A gateway that answers every WebSocket handshake with the header of a
/// text frame of `declared` bytes, and counts the headers sent (the bot's
/// back-off also opens bare connections, to see whether the gateway is up).
fn lying_gateway(declared: u64) -> (u16, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    let connections = Arc::new(AtomicU32::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(mut tcp) = tcp else { continue };
            if accept(&mut tcp).is_err() {
                continue;
            }
            let mut header = vec![0x81, 127];
            header.extend_from_slice(&declared.to_be_bytes());
            if tcp.write_all(&header).is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(30));
                drop(tcp);
            });
        }
    });
    (port, connections)
}

#[test]
fn a_frame_declaring_exabytes_is_refused_and_the_bot_connects_again() {
    // 4 EiB: more than any allocator gives, so setting it aside would end
    // the process.
    let (port, connections) = lying_gateway(1 << 62);
    let discord = FakeDiscord::start();
    discord.with(|w| w.gateway_url = Some(format!("ws://127.0.0.1:{port}")));
    let mut bot = Bot::spawn(discord, json!({}), &[], "ambient=debug,serenity=warn");
    // The first frame ends the shard; the bot starts it again after
    // serenity's five seconds for a clean shutdown and its own back-off.
    let deadline = Instant::now() + Duration::from_secs(60);
    while connections.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        bot.wait_exit(Duration::from_millis(200)).is_none(),
        "the bot exited on the frame:\n{}",
        bot.log()
    );
    assert!(
        connections.load(Ordering::SeqCst) >= 2,
        "the bot did not connect again after refusing the frame:\n{}",
        bot.log()
    );
}
