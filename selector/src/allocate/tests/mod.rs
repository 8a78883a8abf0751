//! The allocator's rules one by one on small pools (counts, All, held
//! devices, taints, constraints, firstAvailable, counters, capacity, the
//! result written), the judgement of one claim, and two properties: every
//! allocation found obeys the rules, and one is found exactly when a brute
//! force over every assignment finds one.

mod fixtures;
mod judge;
mod properties;
mod rules;
mod shapes;
