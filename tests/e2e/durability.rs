//! Killing the process mid-stream loses nothing it acknowledged.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use ambient::ids::MessageId;
use ambient::store::Store;
use serde_json::{Value, json};

use crate::support::home::Home;

#[test]
fn sigkill_mid_stream_loses_no_acknowledged_message() {
    const SENT: usize = 3000;
    const KILL_AFTER: usize = 200;
    let home = Home::new(json!({}));
    let mut child = home
        .command(&["console", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..SENT {
            // Once the process is dead, writes fail: that is expected.
            if writeln!(stdin, "line {i}").is_err() {
                break;
            }
        }
    });

    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut acked: HashMap<MessageId, usize> = HashMap::new();
    let mut killed = false;
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["event"] == "stored" {
            let id = MessageId(v["id"].as_str().unwrap().parse().unwrap());
            acked.insert(id, acked.len());
            if acked.len() == KILL_AFTER && !killed {
                child.kill().unwrap(); // SIGKILL
                killed = true;
            }
        }
    }
    child.wait().unwrap();
    writer.join().unwrap();
    assert!(killed, "the stream ended before the kill");
    assert!(
        acked.len() < SENT,
        "the kill must land mid-stream (acked {})",
        acked.len()
    );

    let store = Store::open(&home.data_dir()).expect("the database opens cleanly after SIGKILL");
    for (id, n) in &acked {
        let row = store
            .message(*id)
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged message #{n} ({id}) was lost"));
        assert!(row.content.starts_with("line "), "{row:?}");
    }
    let ok: String = rusqlite::Connection::open(home.data_dir().join("ambient.db"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}
