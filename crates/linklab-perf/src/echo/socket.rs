//! TCP echo over one socket of any stack ([`TcpOps`]): the smoltcp adapter and the
//! embassy-net one run this same function.

use super::{Echo, ECHO_PORT};
use crate::socket::TcpOps;

/// Largest stream chunk moved per step (bytes on the stack, not the heap).
const CHUNK: usize = 1024;

/// Serves echo on `socket`: listens (again) on port 7 when it is closed, moves what was
/// received back out, closes after the peer closed and everything was echoed. `was_active`
/// remembers whether the connection was counted as opened. Bounded work per call.
pub fn echo_on(core: &mut Echo, socket: &mut impl TcpOps, was_active: &mut bool) {
    if !socket.is_open() {
        *was_active = false;
        if !socket.listen(ECHO_PORT) {
            return;
        }
    }
    if socket.is_active() && !*was_active {
        *was_active = true;
        core.stream_opened();
    }
    if socket.can_recv() && socket.can_send() {
        // Only now: zeroing the chunk on every call cost the main loop ~1 000 instructions a
        // pass (measured on the Cortex-M3 firmware).
        let mut chunk = [0u8; CHUNK];
        while socket.can_recv() && socket.can_send() {
            let room = socket.send_room().min(CHUNK);
            let moved = socket.recv(|rx| core.stream(rx, &mut chunk[..room]));
            if moved == 0 {
                break;
            }
            // Cannot fail to fit: `room` was free send space before the copy.
            let _ = socket.send_slice(&chunk[..moved]);
        }
    }
    if !socket.may_recv() && socket.queues().0 == 0 && socket.may_send() {
        // The peer closed its side and everything was echoed: close ours.
        socket.close();
    }
}
