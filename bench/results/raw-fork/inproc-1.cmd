fork_repro inproc 5 200 0 1
