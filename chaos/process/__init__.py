"""Running the target: traced processes, the stop policy at a boundary, reaping, phases."""
