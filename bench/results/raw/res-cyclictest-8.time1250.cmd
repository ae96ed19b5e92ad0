/usr/bin/time -f '%U %S' /usr/bin/cyclictest -t 2 -a 0,1 -d 0 -p 80 -i 200 -m -l 1250 -q
