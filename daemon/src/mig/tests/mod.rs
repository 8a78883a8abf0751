//! Tests of the MIG planner: hand-picked cases from the issue and the research,
//! then exhaustive checks over every reachable state of every modelled GPU.

mod diff;
mod exhaustive;
mod fixtures;
mod placement;
mod plan_layout;
