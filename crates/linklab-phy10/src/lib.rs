//! linklab-phy10: the 10BASE-T line code (Manchester, link pulses, clock recovery).
#![no_std]
