// Tanka-style: nested objects of manifests, found at any depth.
function(cluster) {
  zeta: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n-' + cluster.name } },
  alpha: {
    deep: {
      deployment: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'n' }, spec: { replicas: cluster.attributes.replicas } },
      labels: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'labels', namespace: 'n' }, data: cluster.labels },
    },
    list: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, stringData: { k: 'v' } }],
  },
}
