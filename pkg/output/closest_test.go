package output

import "testing"

func TestClosest(t *testing.T) {
	apps := []string{"hello", "web", "database", "ingress-nginx"}
	for _, tt := range []struct{ name, want string }{
		{"helo", "hello"},
		{"Web", "web"},
		{"databse", "database"},
		{"ingres-nginx", "ingress-nginx"},
		{"nope", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Closest(tt.name, apps); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
