{
  apiVersion: 'v1',
  kind: 'List',
  items: [
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc', namespace: 'x' }, spec: { ports: [{ port: 80 }] } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: std.extVar('cluster').group } },
  ],
}
