// Shadows vendor/lib.libsonnet when given with -J.
{ cm(name, data):: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name, labels: { from: 'jpath' } }, data: data } }
