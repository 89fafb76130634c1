//! The iperf3 protocol: sans-IO client and server state machines that speak stock iperf3's wire contract.
