//! Echo (RFC 862) over UDP and TCP: what comes in goes back out, for round-trip tests.
