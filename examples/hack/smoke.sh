#!/bin/sh
# A group check (groups[].verify): run on this machine for each cluster of
# the group, with KUBECONFIG reaching only that cluster and the cluster's
# attributes as FLEET_ATTR_*. It passes when web has every replica its
# attributes ask for.
set -eu
want=$FLEET_ATTR_REPLICAS
have=$(kubectl get deployment web -n web -o jsonpath='{.status.availableReplicas}')
echo "$FLEET_CLUSTER_NAME: web has ${have:-0}/$want replicas available"
[ "${have:-0}" -ge "$want" ]
