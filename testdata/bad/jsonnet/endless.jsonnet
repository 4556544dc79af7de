// Never ends, yet never nests deeper than 200 calls: 2^200 additions. Only
// the time limit stops it.
local f(n) = if n == 0 then 1 else f(n - 1) + f(n - 1);
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'endless' }, data: { n: std.toString(f(200)) } }
