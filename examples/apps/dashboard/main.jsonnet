// The dashboard app: a function of the cluster, returning nested objects
// of manifests the way Tanka accepts them.
local kube = import 'kube.libsonnet';
// Encrypted with SOPS for the demo key (../../demo-age-key.txt): kubectl
// fleet decrypts it as it is imported; it is never on disk in the clear.
local credentials = import 'credentials.json';

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
    credentials: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'dashboard-credentials' },
      stringData: credentials,
    },
    deployment: kube.deployment('dashboard', cluster.attributes.registry + '/dashboard:2.0.1', if cluster.group == 'production' then 2 else 1, cluster.attributes.resources),
  },
}
