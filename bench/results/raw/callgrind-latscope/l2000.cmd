valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=bench/results/raw/callgrind-latscope/l2000 target/callgrind-variant/release/latscope -t 2 -a 0,1 -d 0 -p 80 -i 1000 -m -l 2000 -q
