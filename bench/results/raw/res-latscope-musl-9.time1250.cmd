/usr/bin/time -f '%U %S' target/x86_64-unknown-linux-musl/release/latscope -t 2 -a 0,1 -d 0 -p 80 -i 200 -m -l 1250 -q
