//! For unit tests: arms one of the [`super::HOOKS`] so that its first pass
//! on the arming test's thread runs the test's action (a rescan landing
//! between two reads, say), deterministically.
//!
//! The fail-rs registry is global and the tests run in parallel: the action
//! runs only on the thread that armed the hook, and only one test arms hooks
//! at a time (a second arming of the same name would replace the first).
//! The registration is removed when the returned guard drops.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One test arms hooks at a time.
static ONE_TEST: Mutex<()> = Mutex::new(());

/// An armed hook; disarmed on drop.
pub struct ArmedHook {
    passes: Arc<AtomicU32>,
    // Dropped before the lock below: fields drop in order.
    _registered: fail::FailGuard,
    _one_test: MutexGuard<'static, ()>,
}

impl ArmedHook {
    /// How many times this thread passed the hook so far.
    pub fn passes(&self) -> u32 {
        self.passes.load(Ordering::SeqCst)
    }
}

/// Arms hook `name`: its first pass on this thread runs `action`.
pub fn arm(name: &'static str, action: impl FnOnce() + Send + 'static) -> ArmedHook {
    assert!(
        super::HOOKS.contains(&name),
        "{name} is not in crash::HOOKS: {:?}",
        super::HOOKS
    );
    let one_test = ONE_TEST.lock().unwrap_or_else(PoisonError::into_inner);
    let me = std::thread::current().id();
    let passes = Arc::new(AtomicU32::new(0));
    let counted = passes.clone();
    let action = Mutex::new(Some(action));
    let registered = fail::FailGuard::with_callback(name, move || {
        if std::thread::current().id() != me {
            return;
        }
        counted.fetch_add(1, Ordering::SeqCst);
        let first = action.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(action) = first {
            action();
        }
    })
    .unwrap_or_else(|err| panic!("cannot arm hook {name}: {err}"));
    ArmedHook {
        passes,
        _registered: registered,
        _one_test: one_test,
    }
}
