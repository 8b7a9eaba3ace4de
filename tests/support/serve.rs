//! Runs an axum router on 127.0.0.1 on its own thread and runtime, so both
//! async tests and tests that spawn the `ambient` binary can use it.

use axum::Router;

/// A listener on a free port and its `http://…` base URL (taken first, when
/// the router needs to know its own address).
pub fn bind() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Serves `app` on `listener` until the test process ends.
pub fn spawn(listener: std::net::TcpListener, app: Router) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
}
