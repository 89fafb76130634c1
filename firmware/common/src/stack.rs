//! Stack painting: at start the free stack below the current frame is filled with a pattern;
//! the deepest word no longer holding it is the stack's peak use since, counted from the top
//! of the stack (where the board's reset code put the stack pointer) when the board says
//! where that is, so the frames of the reset code, of the board's `main` and of [`crate::run`]
//! (which holds the stack, the apps and their state for the firmware's life) are part of it.

/// The pattern painted into the unused stack.
const PAINT: u32 = 0x5AC3_5AC3;
/// Bytes below the current frame left unpainted (the painting loop's own frame).
const MARGIN: usize = 256;
/// Untouched words in a row that end the scan for the deepest use (4 KiB: every buffer the
/// firmware puts on its stack is initialised, so a used region has no longer clean hole).
const CLEAN_RUN: usize = 1024;

/// The painted region: from `limit` (lowest) to `painted` (the stack pointer at paint time);
/// the stack itself starts at `top`.
#[derive(Clone, Copy, Debug)]
pub struct Stack {
    limit: usize,
    painted: usize,
    top: usize,
}

/// Paints the stack from `limit` (word aligned up) to just below this function's own frame.
/// Never inlined: its frame then lies below the whole frame of its caller, whose locals a
/// painting marker inside the caller's (large) frame could not be trusted to bound.
#[inline(never)]
pub fn paint(limit: usize, top: Option<usize>) -> Stack {
    let marker = 0u32;
    let top_of_stack = top;
    let top = core::hint::black_box(core::ptr::addr_of!(marker)) as usize;
    let limit = (limit + 3) & !3;
    let end = top.saturating_sub(MARGIN) & !3;
    let mut p = limit;
    while p < end {
        // SAFETY: [limit, end) lies between the end of the statics and the live stack, which
        // nothing uses (the board says where the stack may grow to); word aligned.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
    Stack {
        limit,
        painted: top,
        top: top_of_stack.unwrap_or(top).max(top),
    }
}

impl Stack {
    /// Deepest stack use since painting, in bytes below the top of the stack (or, where the
    /// board does not say where that is, below the painting frame). Scans down from the
    /// painting frame and stops after [`CLEAN_RUN`] untouched words in a row, so its cost is
    /// proportional to the stack used, not to the (possibly megabytes of) stack available.
    pub fn peak(&self) -> usize {
        let mut p = self.painted & !3;
        let mut lowest_used = p;
        let mut clean = 0;
        while p > self.limit && clean < CLEAN_RUN {
            p -= 4;
            // SAFETY: as in `paint`; reading our own painted, aligned words.
            if unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
                clean += 1;
            } else {
                lowest_used = p;
                clean = 0;
            }
        }
        self.top.saturating_sub(lowest_used)
    }

    /// Bytes of stack from its top (as [`Stack::peak`]) down to the lowest it may reach.
    pub fn size(&self) -> usize {
        self.top.saturating_sub(self.limit)
    }
}
