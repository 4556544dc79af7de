function(cluster) [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } },
  null,
]
