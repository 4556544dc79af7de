# Reads `go test -bench` output and prints how many times faster kubectl
# fleet is than the way users do the same job today.
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") ns[name] = $i
	print
}
END {
	print ""
	if (ns["BenchmarkRender100Clusters"] && ns["BenchmarkScriptedLoop100Clusters"])
		printf "render, 100 clusters x 20 objects: %.1fx faster than a kustomize-build-per-cluster loop (%.1f ms vs %.1f ms)\n", ns["BenchmarkScriptedLoop100Clusters"] / ns["BenchmarkRender100Clusters"], ns["BenchmarkRender100Clusters"] / 1e6, ns["BenchmarkScriptedLoop100Clusters"] / 1e6
	if (ns["BenchmarkApply100Objects/fleet"] && ns["BenchmarkApply100Objects/kubectl"])
		printf "apply, 100 objects, 1 cluster at 50 ms RTT: %.1fx faster than kubectl apply --server-side (%.2f s vs %.2f s)\n", ns["BenchmarkApply100Objects/kubectl"] / ns["BenchmarkApply100Objects/fleet"], ns["BenchmarkApply100Objects/fleet"] / 1e9, ns["BenchmarkApply100Objects/kubectl"] / 1e9
	if (ns["BenchmarkApply100Objects/fleet-noop"] && ns["BenchmarkApply100Objects/kubectl-noop"])
		printf "apply, 100 unchanged objects, 1 cluster at 50 ms RTT: %.1fx faster than kubectl apply --server-side (%.2f s vs %.2f s)\n", ns["BenchmarkApply100Objects/kubectl-noop"] / ns["BenchmarkApply100Objects/fleet-noop"], ns["BenchmarkApply100Objects/fleet-noop"] / 1e9, ns["BenchmarkApply100Objects/kubectl-noop"] / 1e9
	if (ns["BenchmarkRender100Clusters"] && ns["BenchmarkRenderOneBuild"])
		printf "render, 100 clusters costs %.1f single kustomize builds\n", ns["BenchmarkRender100Clusters"] / ns["BenchmarkRenderOneBuild"]
}
