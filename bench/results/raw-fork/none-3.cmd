fork_repro none 5 200 0 1
