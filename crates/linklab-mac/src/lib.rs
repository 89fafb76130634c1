//! linklab-mac: a software Ethernet MAC for microcontrollers.
#![no_std]
