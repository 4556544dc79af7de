package fleet

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Shard is one of Count replicas' share of a fleet's clusters: reconcile
// --shard Index/Count. Clusters are spread by rendezvous (highest random
// weight) hashing on their names: each cluster goes to the replica whose
// hash of (cluster, replica) is highest. A cluster's owner depends only on
// its name and Count, so replicas agree without talking to each other, and
// going from N to N+1 replicas moves about 1/(N+1) of the clusters, all of
// them to the new replica.
type Shard struct {
	Index, Count int
}

// Sharded reports whether s splits the fleet (the zero Shard, and 0/1,
// own every cluster).
func (s Shard) Sharded() bool { return s.Count > 1 }

// Owns reports whether cluster is s's.
func (s Shard) Owns(cluster string) bool {
	return !s.Sharded() || OwnerOf(cluster, s.Count) == s.Index
}

// String is the flag form, I/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// OwnerOf is the replica, of count, that owns cluster.
func OwnerOf(cluster string, count int) int {
	best, owner := uint64(0), 0
	for i := range count {
		h := sha256.Sum256([]byte(cluster + "\x00" + strconv.Itoa(i)))
		if w := binary.BigEndian.Uint64(h[:8]); i == 0 || w > best {
			best, owner = w, i
		}
	}
	return owner
}

// ParseShard reads I/N. I may be "ordinal": the number after the last "-"
// of hostname, which is a StatefulSet pod's ordinal (web-2 is 2).
func ParseShard(s, hostname string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 0/3, or ordinal/N in a StatefulSet", s)
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		return Shard{}, fmt.Errorf("shard %q: N must be a whole number of replicas, 1 or more", s)
	}
	if i == "ordinal" {
		at := strings.LastIndex(hostname, "-")
		if at < 0 {
			return Shard{}, fmt.Errorf("shard %q: the host name %q does not end in -<ordinal> as a StatefulSet pod's does", s, hostname)
		}
		i = hostname[at+1:]
	}
	index, err := strconv.Atoi(i)
	if err != nil || index < 0 || index >= count {
		return Shard{}, fmt.Errorf("shard %q: I must be a whole number from 0 to %d", s, count-1)
	}
	return Shard{Index: index, Count: count}, nil
}

// Hostname is os.Hostname, or "" when it cannot be read.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}
