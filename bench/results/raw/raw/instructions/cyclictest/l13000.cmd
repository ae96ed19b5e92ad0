valgrind --tool=callgrind --separate-threads=yes --collect-systime=yes --callgrind-out-file=bench/results/raw/raw/instructions/cyclictest/l13000 /usr/bin/cyclictest -t 1 -i 1000 -p 80 -m -q -l 13000
