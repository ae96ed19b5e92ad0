target/release/latscope -t 2 -a -d 0 -i 1000 -p 80 -m -l 2500 -q
