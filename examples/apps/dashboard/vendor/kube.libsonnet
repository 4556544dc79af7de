// A tiny helper library, found through the vendor/ folder beside main.jsonnet.
{
  configMap(name, data):: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: name },
    data: data,
  },
  deployment(name, image, replicas, resources={}):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name },
    spec: {
      replicas: replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: name, image: image, resources: { requests: resources } }] },
      },
    },
  },
}
