//! A fake Giphy-compatible GIF search on 127.0.0.1:
//! `GET /v1/gifs/search?api_key=…&q=…&limit=…&rating=…`. It answers one
//! result per search (`https://media.example/<q>.gif`, in Giphy's shape),
//! refuses a wrong key with 401 quoting it back as careless services do,
//! and records every query it got.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Each search's query parameters, in order.
type Searches = Arc<Mutex<Vec<HashMap<String, String>>>>;

#[derive(Clone)]
pub struct GifServer {
    pub url: String,
    pub key: String,
    searches: Searches,
}

impl GifServer {
    pub fn start(key: &str) -> Self {
        let searches = Arc::new(Mutex::new(Vec::new()));
        let (listener, url) = super::serve::bind();
        let app = Router::new()
            .fallback(search)
            .with_state((key.to_string(), searches.clone()));
        super::serve::spawn(listener, app);
        Self {
            url,
            key: key.into(),
            searches,
        }
    }

    /// The query parameters of every search, in order.
    pub fn searches(&self) -> Vec<HashMap<String, String>> {
        self.searches.lock().unwrap().clone()
    }
}

async fn search(
    State((key, searches)): State<(String, Searches)>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    searches.lock().unwrap().push(q.clone());
    if uri.path() != "/v1/gifs/search" {
        return (StatusCode::NOT_FOUND, "no such route").into_response();
    }
    let given = q.get("api_key").cloned().unwrap_or_default();
    if given != key {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"meta": {"status": 401, "msg": format!("Invalid key {given}")}})),
        )
            .into_response();
    }
    let name = q.get("q").cloned().unwrap_or_default().replace(' ', "-");
    let image = |w: u32| json!({"url": format!("https://media.example/{name}.gif"), "size": "48213", "width": w.to_string(), "height": "200"});
    axum::Json(json!({
        "data": [{"id": "g1", "title": q.get("q"), "images": {"original": image(480), "downsized": image(240)}}],
        "meta": {"status": 200, "msg": "OK"},
    }))
    .into_response()
}
