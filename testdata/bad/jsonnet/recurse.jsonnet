// Recurses forever: each call adds a stack frame.
local f(n) = 1 + f(n + 1);
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'deep' }, data: { n: std.toString(f(0)) } }
