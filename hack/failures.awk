# failures.awk: reads `go test -v` output and prints, for each failed test, the last lines it
# logged (its t.Log/t.Fatal messages, attributed by the === RUN/CONT/NAME headers even when
# parallel tests interleave), under the package it belongs to. hack/e2e.sh keeps this summary so
# that hack/test.sh can repeat it at the very end of a failed run, where a CI excerpt shows it.
#   awk -v keep=20 -f hack/failures.awk go-test-output.log
BEGIN { if (keep == "") keep = 20 }
/^=== (RUN|CONT|NAME) / { cur = $3; next }
/^=== / { next }
/^ *--- FAIL: / { name = $3; failed[name] = 1; order[++nfailed] = name; next }
/^ *--- (PASS|SKIP): / { next }
/^(ok|FAIL|---) *\t/ || /^FAIL\t/ { flush($2); next }
/^[ \t]/ && cur != "" { n[cur]++; buf[cur, n[cur]] = $0 }
END { flush("") }
function flush(pkg,   i, j, t, from) {
  for (i = 1; i <= nfailed; i++) {
    t = order[i]
    printf "--- FAIL: %s%s\n", t, (pkg == "" ? "" : " (" pkg ")")
    from = n[t] - keep + 1; if (from < 1) from = 1
    for (j = from; j <= n[t]; j++) print buf[t, j]
  }
  delete failed; delete order; delete n; delete buf; nfailed = 0; cur = ""
}
