//! SIGINT and SIGTERM as events: the first asks the run to wind down, the
//! second to stop at once.

use tokio::sync::watch;

/// How many times the run was asked to stop (SIGINT or SIGTERM).
#[derive(Clone)]
pub struct Interrupt {
    rx: watch::Receiver<u32>,
}

impl Interrupt {
    /// Listen for SIGINT and SIGTERM for the rest of the process.
    pub fn install() -> anyhow::Result<Interrupt> {
        use tokio::signal::unix::{signal, SignalKind};
        let (tx, rx) = watch::channel(0u32);
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                let n = *tx.borrow() + 1;
                if n == 1 {
                    // Above the live status, at once: the run may take a while to wind down.
                    crate::view::live::eprint_line(
                        "longrun: stopping after this session (Ctrl-C again to stop now)",
                    );
                }
                if n == 2 {
                    crate::view::live::eprint_line("longrun: stopping now");
                }
                if tx.send(n).is_err() {
                    break;
                }
            }
        });
        Ok(Interrupt { rx })
    }

    /// The run was asked to stop at least once.
    pub fn is_set(&self) -> bool {
        *self.rx.borrow() > 0
    }

    /// Resolves once the run has been asked to stop `times` times.
    pub async fn wait_for(&self, times: u32) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|n| *n >= times).await;
    }
}
