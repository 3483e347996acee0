R=target/bundle/racegate; S=harness/tests/submissions/reduce; D=target/diag
t() { local s=$(date +%s.%N); "$@"; echo "[rc=$? $(awk "BEGIN{print $(date +%s.%N) - $s}") s: $*]"; }
echo "== 1 infinite loop alone"; t $R grade --exercise reduce $S/cheat_infinite_loop.cu --timeout 5 --sanitize-timeout 20
nvcc -arch=sm_90 -cubin -o /tmp/l.cubin $S/cheat_infinite_loop.cu && cuobjdump -sass /tmp/l.cubin | grep -E "^\s+/\*[0-9a-f]{4}\*/" | head -20
echo "== 2 clock64 loop alone"; t $R grade --exercise reduce $D/loop2.cu --timeout 5 --sanitize-timeout 20
echo "== 3 flood alone"; t $R grade --exercise reduce $S/cheat_printf_flood.cu
echo "== 4 trap || correct"; t $R grade --exercise reduce $S/cheat_trap.cu > $OUT/trap4.txt 2>&1 & P=$!; sleep 0.3; t $R grade --exercise reduce $S/correct.cu; wait $P; sleep 1; cat $OUT/trap4.txt
echo "== 5 flood || correct"; t $R grade --exercise reduce $S/cheat_printf_flood.cu > $OUT/flood5.txt 2>&1 & P=$!; sleep 0.3; t $R grade --exercise reduce $S/correct.cu; wait $P; sleep 1; cat $OUT/flood5.txt
echo "== 6 clock loop || correct"; t $R grade --exercise reduce $D/loop2.cu --timeout 5 --sanitize-timeout 20 > $OUT/loop6.txt 2>&1 & P=$!; sleep 0.3; t $R grade --exercise reduce $S/correct.cu; wait $P; sleep 1; cat $OUT/loop6.txt
ps -eo pid,etime,cmd | grep -E 'racegate|sanitizer' | grep -v grep
