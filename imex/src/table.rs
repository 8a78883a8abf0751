//! `nvidia-imex-ctl -N`, read: the connectivity table of an IMEX domain, as
//! NVIDIA's published samples lay it out (570.x): a legend, a timestamp,
//! one line per node of the nodes config (`Node #<i> - <entry> - <state> -
//! Version: <v>`), then a matrix headed ` Nodes From\To  0   1 ...` with a
//! row per node: the state of its connection to each other node (`C`
//! connected, `N` never connected, `R` recovering, `D` disconnected, `I` no
//! answer, `A` authenticating, `!V!`/`!M!` mismatches).
//!
//! gpusliced asks it for one row, its own node's: a member's entry is Ready
//! only once that row shows it connected to every other member it maps.
//!
//! Pure: the text in, the row out.

use std::collections::BTreeMap;

/// The header of the matrix.
const MATRIX_HEADER: &str = "Nodes From\\To";

/// The letter of a connection that works.
pub const CONNECTED: &str = "C";

/// Node `index`'s row: the state of its connection to each node, by the
/// other node's index; `None` when the text has no such row.
pub fn row(text: &str, index: u32) -> Option<BTreeMap<u32, String>> {
    let mut lines = text.lines().skip_while(|l| !l.contains(MATRIX_HEADER));
    let header = lines.next()?;
    let columns: Vec<u32> = header
        .split(MATRIX_HEADER)
        .nth(1)?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else {
            break;
        };
        let Ok(from) = first.parse::<u32>() else {
            break;
        };
        if from != index {
            continue;
        }
        let cells: Vec<&str> = words.collect();
        if cells.len() != columns.len() {
            return None;
        }
        return Some(
            columns
                .iter()
                .zip(cells)
                .map(|(to, cell)| (*to, cell.to_owned()))
                .collect(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of NVIDIA's published `nvidia-imex-ctl -N` sample.
    const SAMPLE: &str = "Connectivity Table Legend:
I - Invalid - Node wasn't reachable, no connection status available
N - Never Connected
R - Recovering - Connection was lost, but clean up has not yet been triggered.
D - Disconnected - Connection was lost, and clean up has been triggreed.
A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.
!V! - Version mismatch, communication disabled.
!M! - Node map mismatch, communication disabled.
C - Connected - Ready for operation

5/2/2024 05:47:58.287
Nodes:
Node #0   - 10.115.131.8    - READY                - Version: 570.172
Node #1   - 10.115.131.10   - READY                - Version: 570.172
Node #2   - 10.115.131.12   - UNAVAILABLE          - Version:

 Nodes From\\To  0   1   2
       0        C   C   N
       1        C   C   R
       2        I   I   I

Domain State: DEGRADED
";

    #[test]
    fn a_row_is_read_by_index() {
        let row0 = row(SAMPLE, 0).expect("row 0");
        assert_eq!(row0.get(&1).map(String::as_str), Some("C"));
        assert_eq!(row0.get(&2).map(String::as_str), Some("N"));
        let row1 = row(SAMPLE, 1).expect("row 1");
        assert_eq!(row1.get(&2).map(String::as_str), Some("R"));
        assert_eq!(
            row(SAMPLE, 2).expect("row 2").get(&0).map(String::as_str),
            Some("I")
        );
        assert_eq!(row(SAMPLE, 3), None);
        assert_eq!(row("Query Status returned error code: 14", 0), None);
        assert_eq!(
            row(" Nodes From\\To  0   1\n       0   C\n", 0),
            None,
            "a short row"
        );
    }
}
