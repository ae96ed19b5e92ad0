/usr/bin/cyclictest -t 2 -a 0,1 -d 0 -p 80 -i 200 -m  -l 5000 -q -h 20000 --histfile bench/results/raw/lat-hackbench-cyclictest-7.hist
