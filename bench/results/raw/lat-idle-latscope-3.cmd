target/release/latscope -t 2 -a 0,1 -d 0 -p 80 -i 200 -m  -l 5000 -q --json bench/results/raw/lat-idle-latscope-3.json
