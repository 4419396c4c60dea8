//! `redline serve`: the changes API on one address, with its limits and deadlines.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::Args;
use clap::builder::TypedValueParser;
use redline_server::limit::RateLimit;
use redline_server::webhooks;
use redline_server::{AppState, Clock};

use crate::data::{BlobArgs, StoreArgs};

#[derive(Args)]
pub struct Serve {
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: SocketAddr,
    /// The URL clients reach this server at, for links in answers (signed image
    /// URLs). Defaults to the host each client called.
    #[arg(long)]
    public_url: Option<String>,
    /// Behind a reverse proxy: the header it names the client's address in (e.g.
    /// `X-Forwarded-For`, whose last entry counts). The sign-in calls are
    /// rate-limited per client address; without this, the peer's.
    #[arg(long, value_name = "HEADER")]
    client_ip_header: Option<axum::http::HeaderName>,
    /// How many event streams one token may hold open at once; more are answered
    /// 429 with Retry-After.
    #[arg(long, default_value_t = redline_server::http::events::MAX_STREAMS_PER_TOKEN,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_streams_per_token: usize,
    /// How many images `/blobs` reads at once; a request beyond waits up to 5 s
    /// for its turn, then is answered 503 with Retry-After.
    #[arg(long, default_value_t = redline_server::http::blobs::MAX_READS,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_blob_reads: usize,
    /// The most each project may store (its screenshots, images and what its
    /// filings captured), in MiB; a write past it is refused with 413.
    #[arg(long, default_value_t = redline_server::DEFAULT_PROJECT_QUOTA_MB, value_parser = clap::value_parser!(u64).range(1..=(1 << 40)))]
    project_quota_mb: u64,
    #[command(flatten)]
    transport: redline_server::http::transport::TransportArgs,
    /// How many calls a second each token may make (RPCs and event streams), in
    /// bursts of up to ten seconds' worth; more are answered 429 with Retry-After.
    #[arg(long, default_value_t = RateLimit::default().per_second,
          value_parser = positive_rate)]
    calls_per_second: f64,
    /// Let webhooks be sent to loopback, private and link-local addresses (by
    /// default refused, so a webhook cannot make the server probe its own network).
    #[arg(long)]
    allow_private_webhooks: bool,
    /// Serve `GET /metrics` (Prometheus) on this loopback address, e.g.
    /// 127.0.0.1:9090; without it there is no /metrics. The API's address never
    /// serves it.
    #[arg(long, value_name = "ADDR", value_parser = redline_server::http::metrics::loopback_only)]
    metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    blobs: BlobArgs,
}

impl Serve {
    pub async fn run(self) -> anyhow::Result<()> {
        let Serve {
            addr,
            public_url,
            client_ip_header,
            max_streams_per_token,
            max_blob_reads,
            project_quota_mb,
            transport,
            calls_per_second,
            allow_private_webhooks,
            metrics_addr,
            store: args,
            blobs,
        } = self;
        let store = args.open().await?;
        let images = blobs.open(&store, &args.data).await?;
        tracing::info!(store = images.describe(), "images");
        let mut state = AppState::with_blob_store(store, Clock::System, images).await?;
        state.public_url = public_url.clone();
        state.client_ip_header = client_ip_header;
        state.max_streams_per_token = max_streams_per_token;
        state.blob_reads = redline_server::http::blobs::ReadLimit::new(max_blob_reads);
        state.services.project_quota_bytes = (project_quota_mb * 1024 * 1024) as i64;
        transport.apply(&mut state);
        state.rate_limit = RateLimit::per_second(calls_per_second);
        let listener =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
        if let Some(metrics_addr) = metrics_addr {
            let metrics = tokio::net::TcpListener::bind(metrics_addr)
                .await
                .with_context(|| format!("binding {metrics_addr}"))?;
            tracing::info!(local = %metrics.local_addr()?, "serving /metrics");
            tokio::spawn(redline_server::serve_metrics(metrics, state.clone()));
        }
        let local = listener.local_addr()?;
        // The build tooling waits for this line on stdout.
        println!("listening on http://{local}");
        std::io::stdout().flush()?;
        tracing::info!(%local, "serving");
        webhooks::sender::spawn(
            state.services.clone(),
            crate::webhook::addresses(allow_private_webhooks),
            public_url.unwrap_or_else(|| format!("http://{local}")),
        );
        redline_server::serve(listener, state).await?;
        Ok(())
    }
}

/// A rate: a positive, finite number.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}
