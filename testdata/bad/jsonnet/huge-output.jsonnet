// A string doubled n times: 2^n bytes of output from a few lines. The
// cluster attribute "doublings" sets n; the default, 26, prints 64 MiB and a
// little more, just past the default limit (go-jsonnet needs about 1.3 GB
// and a few seconds to get there). 30 would print 1 GiB.
function(cluster)
  local double(s, n) = if n == 0 then s else double(s + s, n - 1);
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'huge' },
    data: { blob: double('x', std.get(cluster.attributes, 'doublings', 26)) },
  }
