//! linklab-sim: a deterministic virtual-time link simulator with an MCU cost model.
