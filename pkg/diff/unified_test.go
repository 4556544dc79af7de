package diff

import "testing"

func TestUnified(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"change in the middle", "1\n2\n3\n4\n5\n6\n7\n", "1\n2\n3\nfour\n5\n6\n7\n",
			"--- a\n+++ b\n@@ -2,5 +2,5 @@\n 2\n 3\n-4\n+four\n 5\n 6\n"},
		{"insert at the end", "1\n2\n", "1\n2\n3\n",
			"--- a\n+++ b\n@@ -1,2 +1,3 @@\n 1\n 2\n+3\n"},
		{"all added", "", "x\ny\n",
			"--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n",
			"--- a\n+++ b\n@@ -1,3 +1,3 @@\n-1\n+one\n 2\n 3\n@@ -8,3 +8,3 @@\n 8\n 9\n-10\n+ten\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unified("a", "b", tt.a, tt.b, 2); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
