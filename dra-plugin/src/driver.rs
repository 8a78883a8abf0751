//! One DRA driver served to the kubelet: its DRA socket
//! (`<plugins_dir>/<driver>/dra.sock`) served before its registration socket
//! (`<registry_dir>/<driver>-reg.sock`) appears, so the kubelet never dials
//! an endpoint that is not there; the kubelet's verdict on the registration;
//! and the drain and removal of both sockets at shutdown. The plugin serves
//! one of these per driver (the GPU driver, and `compute-domain.nvidia.com`
//! where the node serves ComputeDomains): the kubelet registers each
//! registration socket as a plugin of its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::server::Router;
use tracing::{info, warn};

use crate::registration::{RegistrationService, RegistrationState};
use crate::sockets::{self, SocketError, SocketFile};

/// How long calls in flight may take to finish at shutdown.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Why a driver stopped being served other than by shutdown.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A socket could not be set up.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// The kubelet refused the plugin.
    #[error("the kubelet refused to register the plugin: {reason} (driver {driver})")]
    Refused {
        /// The driver.
        driver: String,
        /// The kubelet's reason.
        reason: String,
    },
    /// A gRPC server stopped by itself.
    #[error("the {server} server of driver {driver} stopped: {message}")]
    Server {
        /// The driver.
        driver: String,
        /// "DRA" or "registration".
        server: &'static str,
        /// Why.
        message: String,
    },
}

/// Where a driver's two sockets go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverSockets {
    /// The DRA socket the kubelet dials.
    pub dra: PathBuf,
    /// The registration socket the kubelet's plugin watcher finds.
    pub registration: PathBuf,
}

type Served = JoinHandle<Result<(), tonic::transport::Error>>;

/// A driver being served: its two servers and sockets.
#[derive(Debug)]
pub struct ServedDriver {
    driver: String,
    dra: Served,
    registration: Served,
    verdicts: watch::Receiver<RegistrationState>,
    files: [SocketFile; 2],
}

impl ServedDriver {
    /// Serves `router` (the driver's DRA services) on its DRA socket, then
    /// the registration service on its registration socket, until `stopped`
    /// turns true.
    pub fn start(
        driver: &str,
        router: Router,
        sockets: &DriverSockets,
        stopped: &watch::Receiver<bool>,
    ) -> Result<Self, DriverError> {
        let (dra_listener, dra_file) = sockets::bind(&sockets.dra)?;
        let dra = serve(driver, "DRA", router, dra_listener, stopped.clone());
        let (service, verdicts) = RegistrationService::server(driver, dra_file.path());
        let (reg_listener, reg_file) = sockets::bind(&sockets.registration)?;
        let registration = serve(
            driver,
            "registration",
            tonic::transport::Server::builder().add_service(service),
            reg_listener,
            stopped.clone(),
        );
        info!(driver, dra = %dra_file.path().display(), registration = %reg_file.path().display(),
              "serving; waiting for the kubelet");
        Ok(Self {
            driver: driver.to_owned(),
            dra,
            registration,
            verdicts,
            files: [dra_file, reg_file],
        })
    }

    /// The DRA socket.
    pub fn dra_socket(&self) -> &Path {
        self.files[0].path()
    }

    /// Resolves when the kubelet refuses the registration or a server ends
    /// by itself (never while all is well).
    pub async fn failed(&mut self) -> DriverError {
        let driver = self.driver.clone();
        tokio::select! {
            reason = refused(&mut self.verdicts) => DriverError::Refused { driver, reason },
            ended = &mut self.dra => server_ended(driver, "DRA", ended),
            ended = &mut self.registration => server_ended(driver, "registration", ended),
        }
    }

    /// After shutdown was asked: waits up to [`DRAIN`] for the calls in
    /// flight, then removes both sockets.
    pub async fn close(self) {
        let Self {
            driver,
            mut dra,
            mut registration,
            files,
            ..
        } = self;
        for (name, task) in [("DRA", &mut dra), ("registration", &mut registration)] {
            if !task.is_finished() && tokio::time::timeout(DRAIN, task).await.is_err() {
                warn!(
                    %driver,
                    server = name,
                    "calls still in flight after the drain time; closing anyway"
                );
            }
        }
        drop(files);
    }
}

fn serve(
    driver: &str,
    name: &'static str,
    router: Router,
    listener: tokio::net::UnixListener,
    mut stopped: watch::Receiver<bool>,
) -> Served {
    let driver = driver.to_owned();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
            info!(%driver, server = name, "closing");
        };
        router
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown)
            .await
    })
}

async fn refused(verdicts: &mut watch::Receiver<RegistrationState>) -> String {
    loop {
        if let RegistrationState::Refused(reason) = &*verdicts.borrow_and_update() {
            return reason.clone();
        }
        if verdicts.changed().await.is_err() {
            // The service is gone; the server-ended branch reports why.
            std::future::pending::<()>().await;
        }
    }
}

fn server_ended(
    driver: String,
    server: &'static str,
    ended: Result<Result<(), tonic::transport::Error>, tokio::task::JoinError>,
) -> DriverError {
    let message = match ended {
        Ok(Ok(())) => "it ended without being asked".to_owned(),
        Ok(Err(err)) => err.to_string(),
        Err(err) => err.to_string(),
    };
    DriverError::Server {
        driver,
        server,
        message,
    }
}
