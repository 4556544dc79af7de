function(cluster) error 'no ' + cluster.name
