//! Getting the allocator tool's binary (`tests/tools/allocator/build.sh`),
//! through the Go tools' one builder (`tests/common/go_tool.rs`), with fixes
//! of known upstream bugs applied when asked (`tests/tools/allocator/fixes/`).

use std::path::PathBuf;

#[path = "../../common/go_tool.rs"]
mod go_tool;

pub use go_tool::{NotBuilt, repo_root};

/// Builds the tool with `fixes` (names of `tests/tools/allocator/fixes/`
/// patches; none for upstream as it is), or finds it built, and returns its
/// path.
pub fn build(fixes: &[&str]) -> Result<PathBuf, NotBuilt> {
    go_tool::build("allocator", "real allocator", fixes)
}
