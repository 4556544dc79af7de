// The dashboard app: a function of the cluster, returning nested objects
// of manifests the way Tanka accepts them.
local kube = import 'kube.libsonnet';

function(cluster) {
  namespace: {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'dashboard' },
  },
  app: {
    config: kube.configMap('dashboard', {
      cluster: cluster.name,
      region: cluster.labels.region,
      url: 'https://dashboard.' + cluster.attributes.domain,
    }),
    deployment: kube.deployment('dashboard', cluster.attributes.registry + '/dashboard:2.0.1', if cluster.group == 'production' then 2 else 1, cluster.attributes.resources),
  },
}
