// KNOWN CRASH, not rendered by the tests: endless recursion in tail calls.
// go-jsonnet (v0.22) does not count tailstrict calls toward its stack
// limit, but still nests a Go call per call, so this overflows the Go stack
// (a fatal error no recover catches) within seconds.
local f(n) = f(n + 1) tailstrict;
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tail' }, data: { n: std.toString(f(0)) } }
