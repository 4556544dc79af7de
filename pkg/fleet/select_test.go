package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelect(t *testing.T) {
	f, err := Parse([]byte(valid), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sel     Selection
		want    []string
		wantErr string
	}{
		{"everything", Selection{}, []string{"staging-eu", "prod-eu", "prod-us"}, ""},
		{"one group", Selection{Groups: []string{"production"}}, []string{"prod-eu", "prod-us"}, ""},
		{"groups keep fleet order", Selection{Groups: []string{"production", "staging"}}, []string{"staging-eu", "prod-eu", "prod-us"}, ""},
		{"glob", Selection{Clusters: []string{"prod-*"}}, []string{"prod-eu", "prod-us"}, ""},
		{"names", Selection{Clusters: []string{"prod-us", "staging-eu"}}, []string{"staging-eu", "prod-us"}, ""},
		{"selector", Selection{Selector: "region=eu"}, []string{"staging-eu", "prod-eu"}, ""},
		{"set selector", Selection{Selector: "region in (us), !tier"}, []string{"prod-us"}, ""},
		{"intersect", Selection{Groups: []string{"production"}, Selector: "region=eu"}, []string{"prod-eu"}, ""},
		{"intersect glob", Selection{Clusters: []string{"*-eu"}, Groups: []string{"staging"}}, []string{"staging-eu"}, ""},
		{"empty intersection", Selection{Groups: []string{"staging"}, Selector: "region=us"}, nil, `no cluster in fleet.yaml matches --group staging --selector "region=us"`},
		{"unknown group", Selection{Groups: []string{"prod"}}, nil, "--group prod: no such group in fleet.yaml (groups: staging, production)"},
		{"unknown cluster", Selection{Clusters: []string{"prod-ap"}}, nil, "--cluster prod-ap: no cluster in fleet.yaml matches"},
		{"glob matching nothing", Selection{Clusters: []string{"dev-*"}}, nil, "--cluster dev-*: no cluster in fleet.yaml matches"},
		{"bad glob", Selection{Clusters: []string{"prod-["}}, nil, "--cluster prod-[: invalid pattern"},
		{"by context", Selection{Contexts: []string{"prod-us", "stg-eu"}}, []string{"staging-eu", "prod-us"}, ""},
		{"context and group", Selection{Contexts: []string{"prod-us"}, Groups: []string{"staging"}}, nil, "no cluster in fleet.yaml matches --group staging --kube-context prod-us"},
		{"bad selector", Selection{Selector: "region in (eu"}, nil, `--selector "region in (eu"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Select(tt.sel)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppTargets(t *testing.T) {
	f, err := Parse([]byte(valid+"apps:\n  - {name: a, manifests: /}\n  - {name: b, manifests: /, groups: [staging]}\n  - {name: c, manifests: /, clusters: ['prod-*'], selector: region=us}\n"), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := f.Select(Selection{})
	for _, tt := range []struct {
		app  string
		want []string
	}{{"a", []string{"staging-eu", "prod-eu", "prod-us"}}, {"b", []string{"staging-eu"}}, {"c", []string{"prod-us"}}} {
		var names []string
		for _, c := range f.App(tt.app).Targets(all) {
			names = append(names, c.Name)
		}
		if diff := cmp.Diff(tt.want, names); diff != "" {
			t.Errorf("app %s targets (-want +got):\n%s", tt.app, diff)
		}
	}
}
