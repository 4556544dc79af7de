package fleet

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in, host string
		want     Shard
		err      string
	}{
		{in: "0/1", want: Shard{0, 1}},
		{in: "2/3", want: Shard{2, 3}},
		{in: " 1/2 ", want: Shard{1, 2}},
		{in: "ordinal/3", host: "fleet-reconcile-2", want: Shard{2, 3}},
		{in: "ordinal/3", host: "fleet-reconcile-3", err: "I must be a whole number from 0 to 2"},
		{in: "ordinal/3", host: "laptop", err: `does not end in -<ordinal>`},
		{in: "3/3", err: "from 0 to 2"},
		{in: "-1/3", err: "from 0 to 2"},
		{in: "1", err: "want I/N"},
		{in: "0/0", err: "1 or more"},
		{in: "a/b", err: "1 or more"},
	} {
		got, err := ParseShard(tc.in, tc.host)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseShard(%q, %q) = %v, %v; want error %q", tc.in, tc.host, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseShard(%q, %q) = %v, %v; want %v", tc.in, tc.host, got, err, tc.want)
		}
	}
}

// Every cluster has exactly one owner, the shares are even, and adding a
// replica moves about 1/(N+1) of the clusters, every one to the new
// replica.
func TestShardsSpreadAndMoveLittle(t *testing.T) {
	names := make([]string, 3000)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%04d", i)
	}
	for _, n := range []int{1, 2, 3, 5, 8} {
		counts := make([]int, n)
		for _, c := range names {
			owners := 0
			for i := range n {
				if (Shard{i, n}).Owns(c) {
					owners++
					counts[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("%d replicas: %s has %d owners", n, c, owners)
			}
		}
		for i, got := range counts {
			if want := len(names) / n; got < want*85/100 || got > want*115/100 {
				t.Errorf("%d replicas: replica %d owns %d of %d clusters, want about %d", n, i, got, len(names), want)
			}
		}
		moved := 0
		for _, c := range names {
			before, after := OwnerOf(c, n), OwnerOf(c, n+1)
			if before != after {
				moved++
				if after != n {
					t.Fatalf("%d→%d replicas: %s moved from %d to %d, not to the new replica", n, n+1, c, before, after)
				}
			}
		}
		if want := len(names) / (n + 1); moved < want*85/100 || moved > want*115/100 {
			t.Errorf("%d→%d replicas moved %d clusters, want about %d", n, n+1, moved, want)
		}
	}
	if (Shard{}).Sharded() || !(Shard{}).Owns("x") {
		t.Error("the zero Shard must own every cluster")
	}
}

// The owners of the names TestReconcileShards (test/e2e) relies on: a
// change of the hash must not quietly turn that test into one replica
// doing everything.
func TestShardOwners(t *testing.T) {
	for name, want := range map[string]int{"shard-stg": 1, "shard-a": 0, "shard-b": 0} {
		if got := OwnerOf(name, 2); got != want {
			t.Errorf("OwnerOf(%q, 2) = %d, want %d", name, got, want)
		}
	}
}
