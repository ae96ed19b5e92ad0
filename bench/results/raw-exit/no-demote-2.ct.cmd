cyclictest -p 10 -a 0 -t 1 -m -i 200 -D 6 -q --json bench/results/raw-exit/no-demote-2.ct.json
