//! A gateway frame is read only up to a size: a gateway whose frame header
//! declares more than `vendor/serenity`'s limit (64 MiB, tungstenite's own
//! default for a message) gets the connection closed, and the bot connects
//! again, where it would otherwise set aside the declared length before a
//! byte of it arrived. A compressed frame is inflated only up to that same
//! limit: a few MiB of zlib that say a gigabyte are refused past 64 MiB.
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

/// The header of a text frame of `declared` bytes, and none of them.
fn lying_header(declared: u64) -> Vec<u8> {
    let mut header = vec![0x81, 127];
    header.extend_from_slice(&declared.to_be_bytes());
    header
}

/// A gateway that answers every WebSocket handshake with `first` (a frame,
/// or its header), holds the connection, and counts the times it was sent
/// (the bot's back-off also opens bare connections, to see whether the
/// gateway is up).
fn gateway_sending(first: Vec<u8>) -> (u16, Arc<AtomicU32>) {
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
            if tcp.write_all(&first).is_ok() {
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

/// Deflate's bits, least significant first (RFC 1951, 3.1.1).
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    used: u32,
}

impl Bits {
    fn bit(&mut self, b: u8) {
        if self.used.is_multiple_of(8) {
            self.bytes.push(0);
        }
        *self.bytes.last_mut().expect("pushed") |= b << (self.used % 8);
        self.used += 1;
    }

    /// A Huffman code: its most significant bit first.
    fn code(&mut self, code: u16, len: u32) {
        for i in (0..len).rev() {
            self.bit(((code >> i) & 1) as u8);
        }
    }
}

/// A zlib stream (RFC 1950) of `repeats × 258 + 1` zero bytes in one block of
/// deflate's fixed codes: a literal zero, then "258 bytes from 1 back" over
/// and over, 13 bits for each 258 bytes.
fn zlib_zeros(repeats: u64) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.bit(1); // the last block
    bits.bit(1); // fixed codes (BTYPE 01, low bit first)
    bits.bit(0);
    bits.code(0x30, 8); // literal 0
    for _ in 0..repeats {
        bits.code(0xC5, 8); // length 258 (symbol 285)
        bits.code(0, 5); // distance 1 (code 0)
    }
    bits.code(0, 7); // end of block (symbol 256)
    let len = repeats * 258 + 1;
    // Adler-32 of zeros: A stays 1, B adds it once a byte.
    let adler = (((len % 65521) as u32) << 16) | 1;
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&bits.bytes);
    out.extend_from_slice(&adler.to_be_bytes());
    out
}

/// The largest this process's memory has been, in bytes (`VmHWM`).
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the bot runs");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/PID/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kb * 1024
}

/// A bot against a gateway that sends `first` on every connection: it must
/// refuse what it is sent, keep running, and connect again (after
/// serenity's five seconds for a clean shutdown and its own back-off).
fn refused_and_connected_again(first: Vec<u8>, within: Duration) -> Bot {
    let (port, connections) = gateway_sending(first);
    let discord = FakeDiscord::start();
    discord.with(|w| w.gateway_url = Some(format!("ws://127.0.0.1:{port}")));
    let mut bot = Bot::spawn(discord, json!({}), &[], "ambient=debug,serenity=warn");
    let deadline = Instant::now() + within;
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
    bot
}

#[test]
fn a_frame_declaring_exabytes_is_refused_and_the_bot_connects_again() {
    // 4 EiB: more than any allocator gives, so setting it aside would end
    // the process.
    refused_and_connected_again(lying_header(1 << 62), Duration::from_secs(60));
}

#[test]
fn a_compressed_frame_that_inflates_to_a_gigabyte_is_refused_past_the_limit() {
    // 6.8 MB on the wire, 1 GiB inflated.
    let zlib = zlib_zeros((1 << 30) / 258);
    let mut frame = vec![0x82, 127];
    frame.extend_from_slice(&(zlib.len() as u64).to_be_bytes());
    frame.extend_from_slice(&zlib);
    let bot = refused_and_connected_again(frame, Duration::from_secs(90));
    // The frame and 64 MiB of it inflated, twice over while the string
    // grows, and the bot's own: far under the gigabyte.
    let peak = peak_memory(bot.pid());
    assert!(
        peak < 400 << 20,
        "the bot's memory peaked at {} MiB",
        peak >> 20
    );
    assert!(
        bot.log().contains("inflates past 67108864 bytes"),
        "{}",
        bot.log()
    );
}
