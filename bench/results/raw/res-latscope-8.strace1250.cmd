strace -f -c -o bench/results/raw/res-latscope-8.strace1250 target/release/latscope -t 2 -a 0,1 -d 0 -p 80 -i 200 -m -l 1250 -q
