//! Delta debugging on statements: the smallest sub-program that still shows a divergence.

use crate::generator::Program;

/// Most candidate programs tried while reducing one divergence.
pub const MAX_REDUCTION_STEPS: usize = 200;

/// Removes blocks from `program` while `diverges` stays true, first halves then single blocks
/// (ddmin), until no single block can go or [`MAX_REDUCTION_STEPS`] candidates were tried.
/// Returns the reduced program; `program` itself is assumed to diverge.
pub fn reduce(program: &Program, mut diverges: impl FnMut(&Program) -> bool) -> Program {
    let mut current = program.clone();
    let mut steps = 0;
    let mut chunk = current.blocks.len().div_ceil(2).max(1);
    while chunk >= 1 && current.blocks.len() > 1 {
        let mut removed_any = false;
        let mut start = 0;
        while start < current.blocks.len() && current.blocks.len() > 1 {
            if steps >= MAX_REDUCTION_STEPS {
                return current;
            }
            let end = (start + chunk).min(current.blocks.len());
            let mut candidate = current.clone();
            candidate.blocks.drain(start..end);
            steps += 1;
            if !candidate.blocks.is_empty() && diverges(&candidate) {
                current = candidate;
                removed_any = true;
            } else {
                start = end;
            }
        }
        if !removed_any {
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(blocks: &[&str]) -> Program {
        Program {
            seed: 0,
            blocks: blocks.iter().map(|b| b.to_string()).collect(),
        }
    }

    #[test]
    fn reduces_to_the_one_block_that_diverges() {
        let p = program(&["a\n", "b\n", "BAD\n", "c\n", "d\n", "e\n", "f\n"]);
        let reduced = reduce(&p, |c| c.source().contains("BAD"));
        assert_eq!(reduced.blocks, vec!["BAD\n"]);
    }

    #[test]
    fn keeps_both_blocks_of_a_divergence_that_needs_two() {
        let p = program(&["x\n", "DEF\n", "y\n", "USE\n", "z\n"]);
        let reduced = reduce(&p, |c| {
            c.source().contains("DEF") && c.source().contains("USE")
        });
        assert_eq!(reduced.blocks, vec!["DEF\n", "USE\n"]);
    }
}
