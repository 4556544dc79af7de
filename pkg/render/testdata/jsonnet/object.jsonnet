local lib = import 'lib.libsonnet';
function(cluster) lib.cm('one', { name: cluster.name, replicas: std.toString(cluster.attributes.replicas) })
