//! Getting the admission tool's binary (`tests/tools/admission/build.sh`),
//! through the Go tools' one builder (`tests/common/go_tool.rs`).

use std::path::PathBuf;

#[path = "../../common/go_tool.rs"]
mod go_tool;

pub use go_tool::{NotBuilt, repo_root};

/// Builds the tool, or finds it built, and returns its path.
pub fn build() -> Result<PathBuf, NotBuilt> {
    go_tool::build("admission", "admission tool", &[])
}
