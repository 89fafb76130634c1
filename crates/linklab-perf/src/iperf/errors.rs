//! iperf3's error numbers (`i_errno`, sent after SERVER_ERROR) and the text iperf3 prints
//! for each, so both ends of a test say the same thing as stock iperf3 3.12.

/// The `i_errno` values (iperf_api.h of iperf3 3.12) this crate sends or explains.
pub mod i_errno {
    /// IENUMSTREAMS: number of parallel streams too large.
    pub const NUM_STREAMS: i32 = 6;
    /// IEBLOCKSIZE: block size too large.
    pub const BLOCK_SIZE: i32 = 7;
    /// IEUNIMP: an option is not implemented (what iperf3 built without SCTP or QUIC
    /// answers for them; a device built without a mode answers it too).
    pub const UNIMP: i32 = 13;
    /// IEUDPBLOCKSIZE: UDP block size invalid.
    pub const UDP_BLOCK_SIZE: i32 = 20;
    /// IERECVPARAMS: unable to receive parameters from the client.
    pub const RECV_PARAMS: i32 = 114;
    /// IESETNODELAY: unable to set TCP_NODELAY.
    pub const SET_NODELAY: i32 = 122;
    /// IESETMSS: unable to set the TCP MSS.
    pub const SET_MSS: i32 = 123;
    /// IESETBUF: unable to set the socket buffer size.
    pub const SET_BUF: i32 = 124;
    /// IESETTOS: unable to set the IP TOS.
    pub const SET_TOS: i32 = 125;
    /// IESETCOS: unable to set the IPv6 traffic class.
    pub const SET_COS: i32 = 126;
    /// IESETFLOW: unable to set the IPv6 flow label.
    pub const SET_FLOW: i32 = 127;
    /// IEAFFINITY: unable to set the CPU affinity.
    pub const AFFINITY: i32 = 132;
    /// IESETCONGESTION: unable to set TCP_CONGESTION.
    pub const SET_CONGESTION: i32 = 134;
    /// IESETPACING: unable to set socket pacing.
    pub const SET_PACING: i32 = 140;
    /// IESETBUF2: socket buffer size not set correctly.
    pub const SET_BUF2: i32 = 141;
    /// IESETDONTFRAGMENT: unable to set IP Do-Not-Fragment.
    pub const SET_DONT_FRAGMENT: i32 = 145;
    /// IESETUSERTIMEOUT: unable to set TCP_USER_TIMEOUT.
    pub const SET_USER_TIMEOUT: i32 = 148;
    /// IESTREAMLISTEN: unable to start the stream listener (how a server without SCTP
    /// answers `--sctp`).
    pub const STREAM_LISTEN: i32 = 202;
}

/// Linux `errno` values sent with SERVER_ERROR (the peer prints its own text for them).
pub mod errno {
    /// EINVAL: invalid argument.
    pub const EINVAL: i32 = 22;
    /// EPROTONOSUPPORT: protocol not supported.
    pub const EPROTONOSUPPORT: i32 = 93;
    /// EOPNOTSUPP: operation not supported.
    pub const EOPNOTSUPP: i32 = 95;
}

/// What iperf3 3.12 prints for `code` (its `iperf_strerror`), and whether it appends the
/// system's text for `errno`.
pub fn text(code: i32) -> (&'static str, bool) {
    match code {
        1 => ("cannot be both server and client", false),
        2 => ("must either be a client (-c) or server (-s)", false),
        3 => ("some option you are trying to set is server only", false),
        4 => ("some option you are trying to set is client only", false),
        5 => ("test duration too long (maximum = 86400 seconds)", false),
        6 => ("number of parallel streams too large (maximum = 128)", false),
        7 => ("block size too large (maximum = 1048576 bytes)", false),
        8 => ("socket buffer size too large (maximum = 536870912 bytes)", false),
        9 => ("invalid report interval (min = 0.1, max = 60 seconds)", false),
        10 => ("TCP MSS too large (maximum = 9216 bytes)", false),
        11 => ("this OS does not support sendfile", false),
        12 => ("bogus value for --omit", false),
        13 => ("an option you are trying to set is not implemented yet", false),
        14 => ("unable to open -F file", true),
        15 => ("invalid burst count (maximum = 1000)", false),
        16 => ("only one test end condition (-t, -n, -k) may be specified", false),
        17 => ("unable to open log file", true),
        18 => ("no SCTP support available", false),
        20 => ("block size invalid (minimum = 16 bytes, maximum = 65507 bytes)", false),
        21 => ("bad TOS value (must be between 0 and 255 inclusive)", false),
        24 => ("bad format specifier (valid formats are in the set [kmgtKMGT])", false),
        25 => ("cannot be both reverse and bidirectional", false),
        26 => ("port number must be between 1 and 65535 inclusive", false),
        27 => ("total required bandwidth is larger than server limit", false),
        28 => ("invalid time interval for calculating average data rate", false),
        30 => ("idle timeout parameter is not positive or larger than allowed limit", false),
        31 => ("receive timeout value is incorrect or not in range", true),
        32 => ("client receive timeout is valid only in receiving mode", false),
        33 => ("send timeout value is incorrect or not in range", true),
        100 => ("unable to create a new test", true),
        101 => ("test initialization failed", true),
        102 => ("unable to start listener for connections", true),
        103 => ("unable to connect to server", true),
        104 => ("unable to accept connection from client", true),
        105 => ("unable to send cookie to server", true),
        106 => ("unable to receive cookie at server", true),
        107 => ("unable to write to the control socket", true),
        108 => ("unable to read from the control socket", true),
        109 => ("control socket has closed unexpectedly", false),
        110 => ("received an unknown control message", false),
        111 => ("unable to send control message", true),
        112 => ("unable to receive control message", true),
        113 => ("unable to send parameters to server", true),
        114 => ("unable to receive parameters from client", true),
        115 => ("unable to package results", true),
        116 => ("unable to send results", true),
        117 => ("unable to receive results", true),
        118 => ("select failed", true),
        119 => ("the client has terminated", false),
        120 => ("the server has terminated", false),
        121 => ("the server is busy running a test. try again later", false),
        122 => ("unable to set TCP/SCTP NODELAY", true),
        123 => ("unable to set TCP/SCTP MSS", true),
        124 => ("unable to set socket buffer size", true),
        125 => ("unable to set IP TOS", true),
        126 => ("unable to set IPv6 traffic class", true),
        127 => ("unable to set IPv6 flow label", false),
        128 => ("unable to reuse address on socket", true),
        129 => ("unable to set socket to non-blocking", true),
        130 => ("unable to set socket window size", true),
        131 => ("protocol does not exist", false),
        132 => ("unable to set CPU affinity", true),
        133 => ("unable to become a daemon", true),
        134 => ("unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host", false),
        135 => ("unable to write PID file", true),
        136 => ("Unable to set/reset IPV6_V6ONLY", true),
        140 => ("unable to set socket pacing", true),
        141 => ("socket buffer size not set correctly", false),
        142 => ("test authorization failed", false),
        143 => ("Unable to bind-to-device (check perror, maybe permissions?)", false),
        144 => ("idle timeout for receiving data", false),
        145 => ("unable to set IP Do-Not-Fragment flag", false),
        148 => ("unable to set TCP/SCTP MSS", true),
        200 => ("unable to create a new stream", true),
        201 => ("unable to initialize stream", true),
        202 => ("unable to start stream listener", true),
        203 => ("unable to connect stream", true),
        204 => ("unable to accept stream connection", true),
        205 => ("unable to write to stream socket", true),
        206 => ("unable to read from stream socket", true),
        207 => ("stream socket has closed unexpectedly", false),
        208 => ("stream has an invalid id", false),
        300 => ("unable to create new timer", true),
        301 => ("unable to update timer", true),
        _ => ("", true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_iperf3_3_12() {
        assert_eq!(text(i_errno::SET_MSS).0, "unable to set TCP/SCTP MSS");
        assert_eq!(
            text(i_errno::STREAM_LISTEN),
            ("unable to start stream listener", true)
        );
        assert_eq!(
            text(121).0,
            "the server is busy running a test. try again later"
        );
        assert_eq!(text(9999), ("", true));
    }
}
