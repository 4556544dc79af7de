{ good: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, bad: { count: 3 } }
