# Folds the text of `go tool pprof -raw` into folded stacks ("root;...;leaf weight"), the
# way users pipe -raw into a folding script. The weight is each sample's last value (for
# Go CPU profiles cpu/nanoseconds, go tool pprof's default); inlined frames are expanded.
/^Samples:/ { mode = "s"; getline; next }
/^Locations/ { mode = "l"; next }
/^Mappings/ { mode = "m"; next }
mode == "s" && /^ *[0-9][0-9 ]*:( [0-9]+)* *$/ {
  i = index($0, ":")
  n = split(substr($0, 1, i - 1), v, " ")
  ns++; w[ns] = v[n]; st[ns] = substr($0, i + 1)
  next
}
mode == "l" && /^ *[0-9]+: / { id = $1; sub(":", "", id); fn[id] = $4; last = id; next }
mode == "l" && NF > 0 { fn[last] = $1 ";" fn[last]; next }
END {
  for (s = 1; s <= ns; s++) {
    k = split(st[s], a, " ")
    key = fn[a[k]]
    for (j = k - 1; j >= 1; j--) key = key ";" fn[a[j]]
    count[key] += w[s]
  }
  for (key in count) printf "%s %.0f\n", key, count[key]
}
