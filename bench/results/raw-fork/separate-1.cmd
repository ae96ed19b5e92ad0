fork_repro separate 5 200 0 1
