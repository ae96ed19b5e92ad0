strace -f -c -o bench/results/raw/res-cyclictest-8.strace5000 /usr/bin/cyclictest -t 2 -a 0,1 -d 0 -p 80 -i 200 -m -l 5000 -q
