target/release/latscope --ballast-mib 2048 --policy rr -p 80 -a 0 -t 1 -i 1000 -D 3 -q --no-exit-demote
