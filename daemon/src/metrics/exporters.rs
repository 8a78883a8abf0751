//! Starting and stopping the exporters `[metrics]` asks for, for `run`.
//!
//! Start (after reconcile, before READY=1): bind the listener, write the
//! textfile once; either failing fails start-up with a message naming the
//! key, the address or the file. Stop (after the API has drained, so the
//! last calls are counted): close the listener, write the textfile a last time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::http::Listener;
use super::textfile::Writer;
use super::{Metrics, MetricsError, UsageSource};
use crate::config::MetricsConfig;

/// The running exporters (none when `[metrics]` enables none).
#[derive(Debug)]
pub struct Exporters {
    listener: Option<Listener>,
    textfile: Option<Writer>,
    source: Arc<dyn UsageSource>,
    metrics: Arc<Metrics>,
}

impl Exporters {
    /// Starts what `config` enables.
    pub async fn start(
        config: &MetricsConfig,
        source: Arc<dyn UsageSource>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, MetricsError> {
        let listener = match config.listen {
            Some(addr) => {
                let listener =
                    Listener::start(addr.addr(), source.clone(), metrics.clone()).await?;
                tracing::info!(address = %listener.addr(), "metrics: serving http://{}/metrics", listener.addr());
                Some(listener)
            }
            None => None,
        };
        let textfile = match &config.textfile {
            Some(path) => {
                let every = Duration::from_secs(config.textfile_interval_seconds);
                let writer =
                    Writer::start(path.clone(), every, source.clone(), metrics.clone()).await;
                let writer = match writer {
                    Ok(writer) => writer,
                    Err(err) => {
                        if let Some(listener) = listener {
                            listener.stop().await;
                        }
                        return Err(err);
                    }
                };
                tracing::info!(path = %path.display(), every = ?every, "metrics: writing the textfile");
                Some(writer)
            }
            None => None,
        };
        Ok(Self {
            listener,
            textfile,
            source,
            metrics,
        })
    }

    /// The listener's bound address, when one runs.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(Listener::addr)
    }

    /// Stops the listener, then writes the textfile a last time.
    pub async fn stop(self) {
        if let Some(listener) = self.listener {
            listener.stop().await;
        }
        if let Some(writer) = self.textfile {
            writer.stop(self.source, self.metrics).await;
        }
    }
}
